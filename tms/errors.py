"""The root of every error TMS raises on purpose. Each carries one clear line for users: the `tms` command
prints it as `error: <line>` with exit status 1, the jobs end with it, and the service maps each kind to one
HTTP status (service/errors.py). The areas' errors derive from it: the table format's (`tms.hudi.errors`),
planning's (`tms.planning.errors`), execution's (`tms.execute.errors`), the database's (`tms.db.errors`) and
configuration's (`ConfigError`)."""


class TMSError(Exception):
    """Something TMS refuses or cannot do, said in one line."""


class ConfigError(TMSError):
    """A setting or option that cannot be used as given."""
