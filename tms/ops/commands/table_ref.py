"""A table named on the command line: its id, its name, or `database.name`."""
from __future__ import annotations

from tms.errors import TMSError

from ..client import TmsClient


def table_names(client: TmsClient, ids: set[int]) -> dict[int, str]:
    """The names of the tables `ids` (database.name where a name is in several databases); none asked: none."""
    if not ids:
        return {}
    tables = client.all_pages("/tables")
    name_count: dict[str, int] = {}
    for t in tables:
        name_count[t["name"]] = name_count.get(t["name"], 0) + 1
    return {int(t["id"]): t["name"] if name_count[t["name"]] == 1 else f"{t['database']}.{t['name']}"
            for t in tables if int(t["id"]) in ids}


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
