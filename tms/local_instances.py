"""The TMS instances `tms up` runs on this machine, recorded so that other commands run from any directory
(`tms tokens create`) find the running instance's database instead of starting a new one.

Each running `tms up` writes one record (its pid, data directory, database URL and service URL) into a
folder private to the user (`$XDG_RUNTIME_DIR/tms`, else `<tmp>/tms-<uid>`), and removes it when it stops.
A record whose process is gone is ignored (and removed)."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

RUNTIME_DIR_ENV = "TMS_RUNTIME_DIR"


@dataclass(frozen=True)
class LocalInstance:
    pid: int
    data_dir: str
    database_url: str
    url: str


def records_dir() -> Path:
    """Where the records are: TMS_RUNTIME_DIR, else $XDG_RUNTIME_DIR/tms, else <tmp>/tms-<uid>."""
    configured = os.environ.get(RUNTIME_DIR_ENV)
    if configured:
        return Path(configured)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "tms"
    return Path(tempfile.gettempdir()) / f"tms-{os.getuid()}"


def _record_path(data_dir: Path) -> Path:
    digest = hashlib.sha256(str(Path(data_dir).resolve()).encode()).hexdigest()[:16]
    return records_dir() / f"instance-{digest}.json"


def record(instance: LocalInstance) -> Path:
    """Write the record of a running instance (readable by this user only: its URL names the database)."""
    folder = records_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = _record_path(Path(instance.data_dir))
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(asdict(instance), out)
    os.replace(temporary, path)
    return path


def forget(data_dir: Path) -> None:
    """Remove the record of the instance of `data_dir` (it stopped)."""
    _record_path(data_dir).unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running() -> list[LocalInstance]:
    """The instances running now (stale records, of processes gone, are removed)."""
    folder = records_dir()
    found = []
    for path in sorted(folder.glob("instance-*.json")) if folder.is_dir() else []:
        try:
            instance = LocalInstance(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            continue
        if _alive(instance.pid):
            found.append(instance)
        else:
            path.unlink(missing_ok=True)
    return found


def running_for(data_dir: Path) -> LocalInstance | None:
    """The running instance of `data_dir`, if any."""
    wanted = str(Path(data_dir).resolve())
    return next((i for i in running() if i.data_dir == wanted), None)
