"""The restore route's cases to a new base path: `POST /api/v1/tables/{id}/restore` with a backup version or a
savepoint and a `target_path`, each a backup_restore task. The restore in place is `savepoint_restore`'s."""
from __future__ import annotations

from typing import Any

from fastapi import Request

from tms.backup.errors import BackupError
from tms.backup.requests import request_restore, request_savepoint_copy
from tms.hudi.storage.paths import is_under_roots

from .errors import validation_error
from .schemas.restore import RestoreRequest
from .schemas.tasks import TaskOut


def restore_to_new_path(request: Request, table_id: int, body: RestoreRequest) -> Any:
    """Record the restore task of `body` (a backup version or a savepoint, to a new path); its TaskOut."""
    if body.in_place or body.target_path is None:
        raise BackupError("give target_path: a restore to a new base path")
    roots = request.app.state.settings.storage_roots
    if not is_under_roots(body.target_path, roots):
        raise validation_error([{"loc": ("target_path",), "type": "value_error",
                                 "msg": f"{body.target_path} is outside the storage roots ({', '.join(roots)})"}],
                               "body")
    with request.app.state.database.transaction() as session:
        if body.savepoint is not None:
            return TaskOut.model_validate(request_savepoint_copy(session, table_id, body.savepoint, body.target_path))
        assert body.version is not None  # the body has exactly one of version and savepoint
        return TaskOut.model_validate(request_restore(session, table_id, body.version, body.target_path,
                                                      catch_up=body.catch_up))
