"""A table's backups: the check of a backup destination (also a policy option's), setting the backup policy."""
from __future__ import annotations

import fsspec
from sqlalchemy.orm import Session

from tms.config import Settings
from tms.db import TablePolicy, TableRecord, TableRepo
from tms.hudi.storage.paths import is_under_roots

from ..errors import validation_error
from ..schemas.backups import BackupPolicyIn

BACKUP_DESTINATION = "tms.backup.destination"
_POLICY_KEYS = (BACKUP_DESTINATION, "tms.backup.schedule", "tms.backup.keep.versions")


def require_backup_destination(settings: Settings, destination: str, *loc: str) -> None:
    """A 422 unless `destination` lies under the storage or backup roots (either set) and fsspec can write it."""
    roots = [*settings.storage_roots, *settings.backup_roots]
    if not is_under_roots(destination, roots):
        raise validation_error([{"loc": loc, "type": "value_error",
                                 "msg": f"{destination} is outside the storage and backup roots "
                                        f"({', '.join(roots)}; TMS_BACKUP_ROOTS adds one)"}], "body")
    try:
        fsspec.get_filesystem_class(fsspec.utils.get_protocol(destination))
    except (ValueError, ImportError) as exc:
        raise validation_error([{"loc": loc, "type": "value_error",
                                 "msg": f"cannot write to {destination}: {exc}"}], "body") from None


def set_backup_policy(session: Session, settings: Settings, table_id: int, policy: BackupPolicyIn
                      ) -> TableRecord:
    """Store `policy` as the table's own `tms.backup.*` options; the table as changed."""
    require_backup_destination(settings, policy.destination, "destination")
    repo = TableRepo(session)
    table = repo.get(table_id)
    changes = dict(zip(_POLICY_KEYS, (policy.destination, policy.schedule, policy.keep_versions), strict=True))
    own = TablePolicy.from_stored((table.own_settings or {}).get("policies")).merged(changes)
    return repo.update(table_id, policies=own.explicit())
