"""The admin token and the callback key of `tms up`: from the environment (TMS_ADMIN_TOKEN,
TMS_CALLBACK_KEY), else kept in files of the data directory (readable by this user only), made the first
time, so they stay the same across restarts."""
from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Secret:
    value: str
    kept_in: Path | None  # None: it came from the environment


def kept_secret(data_dir: Path, name: str, env_var: str) -> Secret:
    """The secret of `env_var` if set, else the one in `data_dir/name` (made now if there is none)."""
    configured = os.environ.get(env_var)
    if configured:
        return Secret(configured, None)
    path = data_dir / name
    try:
        value = path.read_text().strip()
    except FileNotFoundError:
        value = ""
    if not value:
        value = secrets.token_urlsafe(24)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(value + "\n")
    return Secret(value, path)
