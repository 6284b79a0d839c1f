"""A stamp of a table's timeline folders (their modification times), to tell without listing them whether
the timeline changed: a folder's change stamp (`Storage.change_stamp`, its mtime) moves whenever a file is
created, renamed into it or removed. On a local (or locally mounted) filesystem a check costs one `stat` per
folder; on an object store folders have no stamp, and the stamp is None (the timeline is listed every time).

The stamp is taken before the timeline is read, so a change made while it is read moves the mtime past
the stamp. Filesystems keep coarse mtimes (ext4: a clock tick), so a folder changed within the last
`RACY_SECONDS` might change again within the same tick unseen: such a stamp is not given (None), as Git
treats its "racily clean" index entries."""
from __future__ import annotations

import time

from ..context import DEFAULT_CONTEXT, HudiContext
from ..storage.table_storage import Storage

RACY_SECONDS = 2.0
_SEP = ";"


def timeline_stamp(storage: Storage, timeline_dir: str) -> str | None:
    """The stamp of `.hoodie` and the timeline folder, or None if it cannot vouch for them (not a local
    filesystem, a folder missing, a change too recent)."""
    folders = dict.fromkeys((".hoodie", timeline_dir))
    now = time.time()
    parts = []
    for rel in folders:
        mtime_ns = storage.change_stamp(rel)
        if mtime_ns is None:
            return None
        if mtime_ns / 1e9 > now - RACY_SECONDS:
            return None
        parts.append(f"{rel}={mtime_ns}")
    return _SEP.join(parts)


def unchanged_since(base_path: str, stamp: str | None, context: HudiContext = DEFAULT_CONTEXT) -> bool:
    """True if the folders `stamp` names (under a local `base_path`) still have its mtimes; False if they
    changed, are gone, or there is no stamp."""
    if not stamp:
        return False
    storage = context.open_storage(base_path)
    for part in stamp.split(_SEP):
        rel, _, mtime_ns = part.partition("=")
        try:
            if storage.change_stamp(rel) != int(mtime_ns):
                return False
        except ValueError:
            return False
    return True
