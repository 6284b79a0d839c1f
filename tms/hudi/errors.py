"""Errors of the table-format library: each carries one clear line for users."""
from tms.errors import TMSError


class HudiError(TMSError):
    """A table, file or instant that cannot be read or written as asked."""


class TableNotFoundError(HudiError):
    """No Hudi table at the path (no `.hoodie/hoodie.properties`)."""


class UnsupportedTableError(HudiError):
    """A table TMS refuses to touch: unsupported version, CUSTOM merge mode, ..."""


class InstantConflictError(HudiError):
    """An instant file that must not be written: it exists, or its predecessor state is missing."""


class InstantVanishedError(HudiError):
    """An instant the loaded timeline knew whose file is gone (rolled back, or archived) since it was listed."""


class UpdateRejectedError(HudiError):
    """An update to a file group a pending clustering holds, refused as Hudi's SparkRejectUpdateStrategy does."""
