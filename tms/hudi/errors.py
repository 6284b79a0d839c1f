"""Errors of the table-format library: each carries one clear line for users. `HudiError` is the root of every
error the library raises on purpose (it knows nothing of its callers' errors: they map it to theirs)."""


class HudiError(Exception):
    """A table, file or instant that cannot be read or written as asked."""


class HudiConfigError(HudiError):
    """An option given to the library (a write option, a concurrency option) that cannot be used as given."""


class LockConfigError(HudiConfigError):
    """Lock options TMS cannot honour: an unknown or refused provider, a missing or malformed option."""


class TableNotFoundError(HudiError):
    """No Hudi table at the path (no `.hoodie/hoodie.properties`)."""


class UnsupportedTableError(HudiError):
    """A table TMS refuses to touch: unsupported version, CUSTOM merge mode, ..."""


class UnsupportedStorageError(HudiError):
    """A write a store cannot do exactly (a create-once file on a store without a conditional create)."""


class StorageUnavailableError(HudiError):
    """A store that did not answer as asked, after its client's retries: unreachable, timing out, failing."""


class InstantConflictError(HudiError):
    """An instant file that must not be written: it exists, or its predecessor state is missing."""


class InstantVanishedError(HudiError):
    """An instant the loaded timeline knew whose file is gone (rolled back, or archived) since it was listed."""


class UpdateRejectedError(HudiError):
    """An update to a file group a pending clustering holds, refused as Hudi's SparkRejectUpdateStrategy does."""
