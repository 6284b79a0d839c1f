"""Who a TMS process is: its instance id, its version, and the heartbeat every role records."""
from __future__ import annotations

import os
import socket
import uuid
from importlib import metadata
from typing import Any

from sqlalchemy.orm import Session

from tms.db import InstanceRepo


def tms_version() -> str:
    try:
        return metadata.version("tms")
    except metadata.PackageNotFoundError:  # running from a checkout
        return "dev"


def new_instance_id() -> str:
    """host:pid:random — unique per process start, readable in `GET /api/v1/instances`."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def record_heartbeat(session: Session, instance_id: str, roles: list[str], info: dict[str, Any]) -> None:
    InstanceRepo(session).heartbeat(instance_id, roles=roles, host=socket.gethostname(), pid=os.getpid(),
                                    version=tms_version(), info=info)
