"""Finding Hudi tables under a storage root: a folder holding `.hoodie/` is a table (and is not descended into);
hidden folders (`.x`, `_x`) are skipped; folders are listed level by level down to `max_depth`. Folders already
known to be tables are not listed again (a rescan lists only the levels above them), so a rescan of a root
whose tables did not change costs the listings of the levels above the tables, not one per table."""
from __future__ import annotations

import posixpath
from collections.abc import Collection
from dataclasses import dataclass, field

from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.storage.paths import join, normalize_base_path

HOODIE = ".hoodie"


@dataclass
class Found:
    tables: list[str] = field(default_factory=list)  # base paths, normalized
    listings: int = 0  # folders listed (each one LIST on an object store)


def find_tables(root: str, *, known: Collection[str] = (), max_depth: int = 4,
                context: HudiContext = DEFAULT_CONTEXT) -> Found:
    """The tables under `root` (the root itself may be one). `known`: base paths known to be tables, taken as
    tables when their folder is listed by their parent, without a listing of their own."""
    root = normalize_base_path(root).rstrip("/") or "/"
    storage = context.open_storage(root)
    known_paths = set(known)
    found = Found()
    level = [""]
    for _ in range(max_depth + 1):
        below = []
        for rel in level:
            path = join(root, rel) if rel else root
            if path in known_paths:
                found.tables.append(path)
                continue
            entries = storage.listdir(rel)
            found.listings += 1
            if any(e.name == HOODIE and e.is_dir for e in entries):
                found.tables.append(path)
                continue
            below += [posixpath.join(rel, e.name) if rel else e.name for e in entries
                      if e.is_dir and not e.name.startswith((".", "_"))]
        level = below
        if not level:
            break
    return found
