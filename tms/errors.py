"""The root of every error TMS raises on purpose. Each carries one clear line for users: the `tms` command
prints it as `error: <line>` with exit status 1, the jobs end with it, and the service maps each kind to one
HTTP status (service/errors.py). The areas' errors derive from it: planning's (`tms.planning.errors`),
execution's (`tms.execute.errors`), the database's (`tms.db.errors`) and configuration's (`ConfigError`). The
table-format library `tms.hudi` knows nothing of TMS: its errors have their own root, `HudiError`, told the same
way (`ONE_LINE_ERRORS`)."""
from tms.hudi.errors import HudiError


class TMSError(Exception):
    """Something TMS refuses or cannot do, said in one line."""


class ConfigError(TMSError):
    """A setting or option that cannot be used as given."""


# What TMS tells in one line (and the service as a 4xx): its own errors and the format library's.
ONE_LINE_ERRORS: tuple[type[Exception], ...] = (TMSError, HudiError)
