"""A change feed of timeline folders on local filesystems, from the kernel (Linux inotify).

Listing a folder costs its length: on a timeline of 10,000 instants (30,000 files) about 10 ms, on every
reload. The kernel queues a watched folder's changes as they happen, so a reload that takes them costs
only what changed and is exactly as fresh as a listing made at the same moment.

The feed is exact or it says it is not: `FolderChanges.take()` returns None whenever it cannot vouch for
every change since the last take (the watch is new, the kernel's queue overflowed, the folder was moved
or deleted, too many changes piled up untaken), and the timeline then lists the folder as before.
Watches are only made on filesystems whose changes all pass through this kernel: not on NFS, SMB, FUSE
or other network filesystems, where another machine's writes raise no event."""
from __future__ import annotations

import errno
import logging
import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

try:  # Linux only; elsewhere (and where it is not installed, as on a Spark executor) nothing is watched
    from inotify_simple import INotify
    from inotify_simple import flags as F
except ImportError:  # pragma: no cover
    INotify = None

log = logging.getLogger(__name__)

# Filesystems whose every change is made through the local kernel.
LOCAL_FILESYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs", "jfs",
                               "reiserfs", "bcachefs"})
if INotify is not None:
    _REMOVED = F.DELETE | F.MOVED_FROM
    _LOST = F.DELETE_SELF | F.MOVE_SELF | F.UNMOUNT | F.IGNORED  # the folder itself went away: no more events
    _MASK = F.CREATE | F.MOVED_TO | _REMOVED | F.DELETE_SELF | F.MOVE_SELF | F.ONLYDIR
# Changes kept untaken, per folder and in all: beyond, the folder's next reload lists it (no worse than
# without a feed), so a process watching thousands of timelines that are seldom planned stays small.
MAX_UNTAKEN = 1_000
MAX_UNTAKEN_IN_ALL = 200_000


@dataclass(eq=False)
class FolderChanges:
    """The changes of one watched folder since its consumer last took them (or restarted)."""

    path: str
    # Weak: a dropped watcher (its planner gone) closes its inotify instance at once, cycles or not.
    watcher_ref: Callable[[], TimelineWatcher | None] = field(repr=False)
    wd: int | None = None
    changes: list[tuple[str, bool]] = field(default_factory=list)  # (name, present after the change), in order
    complete: bool = False  # every change since the last restart is in `changes`

    def take(self) -> list[tuple[str, bool]] | None:
        """The changes since the last take, in order; None if they are not all known: then `restart()` and
        list the folder."""
        watcher = self.watcher_ref()
        if watcher is None:
            return None
        with watcher.lock:
            watcher.drain()
            return watcher.clear(self) if self.complete else None

    def restart(self) -> None:
        """About to list the folder: from now on the changes are complete again (events queued before
        this moment are dropped; the listing that follows sees their effect)."""
        watcher = self.watcher_ref()
        if watcher is not None:
            with watcher.lock:
                watcher.drain()
                if self.wd is None:
                    watcher.rewatch(self)
                watcher.clear(self)
                self.complete = self.wd is not None


class TimelineWatcher:
    """One inotify instance for the folders a process watches (a planner's cached tables)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._inotify: INotify | None = None
        self._by_wd: dict[int, list[FolderChanges]] = {}
        self._untaken = 0  # changes held in all folders
        # The kernel refused a watch for lack of watches: no more are asked for until one is freed.
        self.watch_limit_reached = False

    def watch(self, path: str) -> FolderChanges | None:
        """Start watching a folder; None if it is not on a local filesystem or cannot be watched."""
        fs_type = filesystem_type(path)
        if INotify is None or fs_type not in LOCAL_FILESYSTEMS:
            log.debug("not watching %s: filesystem %s", path, fs_type)
            return None
        changes = FolderChanges(path, weakref.ref(self))
        with self.lock:
            return changes if self.rewatch(changes) else None

    def rewatch(self, changes: FolderChanges) -> bool:
        """(Re)create the watch of `changes` (under the lock); False if the kernel refuses it."""
        if self.watch_limit_reached:
            return False
        try:
            if self._inotify is None:
                self._inotify = INotify()
            wd = self._inotify.add_watch(changes.path, _MASK)
        except OSError as e:  # no such folder, or the watch limit (fs.inotify.max_user_watches) is reached
            if e.errno == errno.ENOSPC:
                self.watch_limit_reached = True
                log.warning("the kernel's inotify watch limit (fs.inotify.max_user_watches) is reached at %s "
                            "watched timelines: the timelines loaded beyond it are listed on every reload",
                            len(self._by_wd))
            else:
                log.info("cannot watch %s (%s): its timeline is listed on every reload", changes.path, e)
            return False
        changes.wd = wd
        self._by_wd.setdefault(wd, []).append(changes)
        return True

    def forget(self, changes: FolderChanges | None) -> None:
        """Stop feeding `changes` (its table left the cache)."""
        if changes is None:
            return
        with self.lock:
            changes.watcher_ref = _gone
            self._unlink(changes)

    def clear(self, changes: FolderChanges) -> list[tuple[str, bool]]:
        """Empty a folder's change list (under the lock); returns what it held."""
        out, changes.changes = changes.changes, []
        self._untaken -= len(out)
        return out

    def _unlink(self, changes: FolderChanges) -> None:
        self.clear(changes)
        wd, changes.wd, changes.complete = changes.wd, None, False
        consumers = self._by_wd.get(wd, []) if wd is not None else []
        if changes in consumers:
            consumers.remove(changes)
        if wd is not None and not consumers:
            self._by_wd.pop(wd, None)
            self.watch_limit_reached = False
            if self._inotify is not None:  # a folder is only watched through the inotify instance
                try:
                    self._inotify.rm_watch(wd)
                except OSError:
                    pass  # the kernel dropped it already (the folder is gone)

    def drain_now(self) -> None:
        """Empty the kernel's queue, which holds at most fs.inotify.max_queued_events events for all the
        folders (beyond, it overflows and every folder is listed again): the planner calls this between
        passes."""
        with self.lock:
            self.drain()

    def drain(self) -> None:
        """Move the kernel's queued events to the folders' change lists (under the lock)."""
        if self._inotify is None:
            return
        while True:
            events = self._inotify.read(timeout=0)
            if not events:
                return
            for event in events:
                if event.mask & F.Q_OVERFLOW:  # events were lost: every folder must be listed again
                    for consumers in self._by_wd.values():
                        for changes in consumers:
                            self.clear(changes)
                            changes.complete = False
                    continue
                for changes in list(self._by_wd.get(event.wd, ())):
                    if event.mask & _LOST:
                        self._unlink(changes)
                    elif changes.complete:
                        changes.changes.append((event.name, not event.mask & _REMOVED))
                        self._untaken += 1
                        if len(changes.changes) > MAX_UNTAKEN or self._untaken > MAX_UNTAKEN_IN_ALL:
                            self.clear(changes)
                            changes.complete = False

    def close(self) -> None:
        with self.lock:
            for consumers in list(self._by_wd.values()):
                for changes in list(consumers):
                    changes.watcher_ref = _gone
                    self._unlink(changes)
            if self._inotify is not None:
                self._inotify.close()
                self._inotify = None


def _gone() -> None:
    return None


def filesystem_type(path: str) -> str | None:
    """The type of the filesystem `path` is on (from /proc/self/mountinfo), None if unknown."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            mounts = f.read().splitlines()
    except OSError:  # not Linux
        return None
    real = os.path.realpath(path)
    best, best_type = "", None
    for line in mounts:
        fields, _, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) < 5 or not rest:
            continue
        point = parts[4].replace("\\040", " ")
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, best_type = point, rest.split()[0]
    return best_type
