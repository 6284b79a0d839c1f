"""The restore route's backup case: `POST /api/v1/tables/{id}/restore` with a version (to a new base path).
The savepoint case is `savepoint_restore`'s."""
from __future__ import annotations

from typing import Any

from fastapi import Request

from tms.backup.errors import BackupError
from tms.backup.requests import request_restore
from tms.hudi.storage.paths import is_under_roots

from .errors import validation_error
from .schemas.restore import RestoreRequest
from .schemas.tasks import TaskOut


def restore_from_backup(request: Request, table_id: int, body: RestoreRequest) -> Any:
    """Record the restore task of `body` (a backup version to a new path); its TaskOut."""
    if body.in_place or body.target_path is None:
        raise BackupError("a backup version is restored to a new base path: give target_path (in place is not "
                          "available for backup versions in this build)")
    roots = request.app.state.settings.storage_roots
    if not is_under_roots(body.target_path, roots):
        raise validation_error([{"loc": ("target_path",), "type": "value_error",
                                 "msg": f"{body.target_path} is outside the storage roots ({', '.join(roots)})"}],
                               "body")
    assert body.version is not None  # the body has exactly one of version and savepoint
    with request.app.state.database.transaction() as session:
        return TaskOut.model_validate(request_restore(session, table_id, body.version, body.target_path))
