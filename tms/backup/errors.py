"""Why a backup, its expiry or a restore is refused or failed."""
from tms.errors import TMSError


class BackupError(TMSError):
    """A backup, backup-clean or restore that cannot be done exactly (said in one line)."""


class BackupInconsistentError(BackupError):
    """The table changed under the copy in a way the version cannot hold (a file it needs was deleted): the
    attempt fails and its retry takes a new snapshot."""
