"""A table named on the command line: its id, its name, or `database.name`."""
from __future__ import annotations

from tms.errors import TMSError

from ..client import TmsClient


def table_id(client: TmsClient, ref: str) -> int:
    """The id of the table `ref` names; a one-line TMSError when none or several match."""
    ref = ref.strip()
    if ref.isdigit():
        return int(ref)
    database, _, name = ref.rpartition(".")
    if not name:
        raise TMSError(f"{ref!r} names no table: give its id, name or database.name")
    found = [t for t in client.all_pages("/tables", name=name)
             if t["name"] == name and (not database or t["database"] == database)]
    if not found:
        raise TMSError(f"no table named {ref!r}")
    if len(found) > 1:
        ids = ", ".join(str(t["id"]) for t in found)
        raise TMSError(f"{ref!r} names several tables ({ids}): give its id or database.name")
    return int(found[0]["id"])
