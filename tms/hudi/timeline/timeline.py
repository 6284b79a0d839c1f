"""The active timeline of a table: its instants, their contents, and safe state transitions.

`reload()` is incremental: it lists the timeline folder's names and parses only names it has not
seen. Given a change feed of the folder (timeline_watch, on local filesystems), it takes the folder's
changes instead of listing it; given a `tail_listing` (a long-lived reader's), it lists only the names after
a key where the store can (see tail_listing for when that sees every change). The instants are indexed by
action and by pending state, and the queries the planner makes (`iter_instants` with bounds, `pending`,
`last_of`) cost what they return, not the timeline's length."""
from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from itertools import filterfalse

from ..errors import HudiError, InstantConflictError, InstantVanishedError
from ..storage.table_storage import Storage
from ..table.properties import TableConfig
from .archived import HISTORY_DIR, VERSION_FILE, ArchivedRow, ArchivedTimeline
from .instant import Action, Instant, State, instant_file_name, new_instant_time, parse_instant_file_name
from .instant_time import TimeGenerator
from .serde import (
    CommitMetadata,
    FileBytes,
    MetadataFormatError,
    parse_clean_metadata,
    parse_cleaner_plan,
    parse_commit_metadata,
    read_commit_partitions,
)
from .tail_listing import TailListing
from .watch import FolderChanges

# The memory of one known instant file (name, Instant, index entries) and of an empty timeline and its
# table, measured with tracemalloc on loaded timelines (tests/scale checks the estimate).
NAME_BYTES = 650
TIMELINE_BYTES = 2_500
# Instant files larger than this are read each time they are asked for, not kept: the commit of a compaction over a
# million file groups holds a million write statistics (hundreds of MB), and is read once per pass at most.
CACHED_FILE_BYTES = 8 * 2**20


class Timeline:
    def __init__(self, storage: Storage, config: TableConfig, changes: FolderChanges | None = None):
        self.storage = storage
        self.config = config
        self.dir = config.timeline_dir
        self.changes = changes  # the folder's change feed, if it is watched
        self._names: set[str] = set()
        # instant time -> {state: Instant}; each instant time has one action (the pending one may
        # be renamed at completion: compaction -> commit, clustering -> replacecommit).
        self._states: dict[str, dict[State, Instant]] = {}
        self._sorted: list[str] = []          # instant times, ascending
        # Indexes over each instant's latest state (its action may change at completion):
        self._by_action: dict[str, list[str]] = {}  # action -> instant times, ascending
        self._pending: list[str] = []               # instant times without a completed file, ascending
        # A savepoint has the instant time of the commit it keeps: savepoints are indexed apart.
        self._savepoints: dict[str, dict[State, Instant]] = {}
        self._content: dict[str, bytes] = {}  # file name -> bytes (immutable once completed)
        self._max_time = ""                   # latest instant or completion time ever seen
        self._latest: list[Instant] | None = None  # instants() cache, dropped on any change
        self._pinned = 0                      # > 0 inside pinned(): reads reuse one listing
        # What was added since a point (added_since): the instant times of the files added, in order, since
        # the last removal; a removal starts a new era (readers then read everything again).
        self._era = 0
        self._added_times: list[str] = []
        self.time_generator = TimeGenerator()  # instant and completion times (see instant_time)
        self.tail_listing: TailListing | None = None  # list only the folder's tail (a long-lived reader's)
        self._archived: ArchivedTimeline | None = None  # v8+: read when an archived instant's completion matters
        self._tail_reloads = 0                # reloads since the folder was last listed whole
        # The archived timeline's version at the last whole listing (tail listings only): an archiver deletes the
        # oldest instant files, behind any tail, and writes a new version first; a tail listing that finds the
        # version changed lists the folder whole instead, so archived instants are forgotten, never read.
        self._archive_version: str | None = None
        # Where an exact reload may start listing (see _settle_exact_floor): the oldest commit a savepoint made
        # since the last exact listing can keep, and the newest clean that bound was taken from.
        self._exact_floor: str | None = None
        self._floor_clean = ""
        self.reload()

    # --- loading ---------------------------------------------------------------------------------
    def reload(self, *, force: bool = False, full: bool = False, exact: bool = False) -> list[Instant]:
        """Pick up instant files written since the last load (and forget removed ones): from the change feed
        if there is one that knows every change, else (or if `full`) by listing the folder. Returns the
        newly seen instants. Inside `pinned()` only a forced reload looks at storage. With a `tail_listing`,
        only the folder's tail is listed unless `full`; `exact` (a caller deciding on savepoints) lists from
        the oldest commit a savepoint made since the last exact listing can keep (see _settle_exact_floor),
        and the whole folder when that is unbounded."""
        if self._pinned and not force:
            return []
        known = self._names
        removed: Iterable[str]
        feed = None if full or self.changes is None else self.changes.take()
        tail_key = None
        if feed is None:
            if self.changes is not None:
                self.changes.restart()  # before listing: changes from now on are fed again
            tail_key = None if full else self._tail_key()
            if exact and tail_key is not None:
                # Savepoints are named by the commit they keep: list from the oldest one a savepoint made
                # since the last exact listing can keep; older savepoints are known from earlier listings.
                tail_key = None if self._exact_floor is None else min(tail_key, self._exact_floor[:14])
            tail = None if tail_key is None else self.storage.names_after(self.dir, tail_key)
            if tail is not None and self.archived_version() != self._archive_version:
                tail = None  # archived since the last whole listing: the instants it removed are behind the tail
            if tail is None or tail_key is None:
                tail_key = None
                self._tail_reloads = 0
                if self.tail_listing is not None:  # read before the listing: an archival in between shows next time
                    self._archive_version = self.archived_version()
                listing = self.storage.names(self.dir)
                added = list(filterfalse(known.__contains__, listing))  # a C loop: the listing may be long
                # A name can only be gone if the listing is shorter than the known names plus the new ones.
                removed = known.difference(listing) if len(known) + len(added) != len(listing) else ()
            else:
                self._tail_reloads += 1
                added = list(filterfalse(known.__contains__, tail))
                listed = set(tail)
                removed = [n for n in known if n > tail_key and n not in listed]
        else:
            now_present = dict(feed)  # a name's last change says whether it is there now
            added = [n for n, present in now_present.items() if present and n not in known]
            removed = [n for n, present in now_present.items() if not present and n in known]
        if added or removed:
            self._latest = None
        if removed:
            self._era += 1
            self._added_times.clear()
        for name in removed:
            known.discard(name)
            self._content.pop(name, None)
            inst = parse_instant_file_name(name)
            if inst is not None and inst.action == Action.SAVEPOINT:
                self._savepoints.get(inst.timestamp, {}).pop(inst.state, None)
                if not self._savepoints.get(inst.timestamp, True):
                    del self._savepoints[inst.timestamp]
            elif inst is not None:
                self._drop_state(inst.timestamp, inst.state)
        new = []
        unseen_behind = False  # the tail shows a change whose effects may lie behind its key
        # (listed from the savepoint floor, a savepoint the listing shows is all there is to see of it)
        behind = _ROLLING_BACK if exact else _REMOVING_ACTIONS
        for name in removed if tail_key is not None else ():
            inst = parse_instant_file_name(name)
            unseen_behind |= inst is not None and inst.action in behind
        for name in added:
            known.add(name)
            inst = parse_instant_file_name(name)
            if inst is None:
                continue
            unseen_behind |= inst.action in behind
            if inst.action == Action.SAVEPOINT:
                self._savepoints.setdefault(inst.timestamp, {})[inst.state] = inst
                self._max_time = max(self._max_time, inst.completion_time or "")
                continue
            self._put_state(inst)
            self._added_times.append(inst.timestamp)
            new.append(inst)
        if tail_key is not None and unseen_behind:
            new += self.reload(force=True, full=True)
        elif self.tail_listing is not None and feed is None and (exact or tail_key is None) and \
                not self._settle_exact_floor(checked=None if tail_key is None else self._exact_floor):
            new += self.reload(force=True, full=True)  # a clean since the floor allows older savepoints
        new.sort()
        return new

    def _settle_exact_floor(self, checked: str | None) -> bool:
        """After an exact or whole listing: the floor of the next exact listing, the savepoint bound of now.
        False when the listing just made from floor `checked` may have missed a savepoint: a clean seen since
        that floor was taken lowered the bound (its policy retains more) or removed it.

        A clean never lowers the bound unless its policy changes, so a savepoint made after this listing
        keeps a commit at or after the floor, or after the bound of a later clean, which the next exact
        listing checks here."""
        cleans = list(self.iter_instants((Action.CLEAN,), after=self._floor_clean or None))
        if checked is not None and any((b := self._clean_bound(c)) is None or b < checked for c in cleans):
            return False
        self._exact_floor = self.savepoint_bound()
        if cleans:
            self._floor_clean = cleans[-1].timestamp
        return True

    def savepoint_bound(self) -> str | None:
        """The oldest commit a savepoint may keep now, as Hudi's SavepointActionExecutor decides it: the
        earliest commit to retain of the latest clean (of its plan while pending; older slices may be cleaned
        already). None where Hudi sets no bound beyond the timeline: no clean, or one without that commit."""
        clean = self.last_of((Action.CLEAN,))
        return None if clean is None else self._clean_bound(clean)

    def _clean_bound(self, clean: Instant) -> str | None:
        """The earliest commit to retain of a clean (of its plan while pending); None if it has none or
        cannot be read."""
        try:
            if clean.is_completed:
                return parse_clean_metadata(self.read(clean)).earliest_commit_to_retain or None
            earliest = parse_cleaner_plan(self.read_plan(clean.timestamp)).earliest_instant_to_retain
        except (HudiError, ValueError, OSError):
            return None
        return earliest.timestamp if earliest is not None and earliest.timestamp else None

    def archived_version(self) -> str | None:
        """The archived (LSM) timeline's current version (its `_version_` file), None while nothing is archived."""
        try:
            return self.storage.read_bytes(f"{self.dir}/{HISTORY_DIR}/{VERSION_FILE}").decode().strip()
        except FileNotFoundError:
            return None

    def _tail_key(self) -> str | None:
        """The name to list the folder after, None when it must be listed whole: no tail listing, nothing
        known yet, the periodic full listing due, or a rollback, restore or savepoint pending (it may
        remove or add files behind any key until it completes)."""
        tail = self.tail_listing
        if tail is None or not self._names or self._tail_reloads + 1 >= tail.full_every:
            return None
        if self.pending((Action.ROLLBACK, Action.RESTORE)):
            return None
        if any(State.COMPLETED not in states for states in self._savepoints.values()):
            return None
        return tail.start_after(self._max_time, self._pending[0] if self._pending else None)

    def added_since(self, mark: tuple[int, int] | None) -> tuple[list[str] | None, tuple[int, int]]:
        """The instant times of the instant files added since `mark` (None as `mark`, or after a removal since
        it: None, read the whole timeline), and the mark of now. Costs what was added, not the timeline."""
        now = (self._era, len(self._added_times))
        if mark is None or mark[0] != self._era:
            return None, now
        return self._added_times[mark[1]:], now

    # --- the indexes ---------------------------------------------------------------------------------
    def _put_state(self, inst: Instant) -> None:
        ts = inst.timestamp
        states = self._states.get(ts)
        if states is None:
            states = self._states[ts] = {}
            _insert(self._sorted, ts)
        before = states[max(states)] if states else None
        states[inst.state] = inst
        self._max_time = max(self._max_time, ts, inst.completion_time or "")
        self._reindex(ts, before, states[max(states)])

    def _drop_state(self, ts: str, state: State) -> None:
        states = self._states.get(ts)
        if not states or state not in states:
            return
        before = states[max(states)]
        del states[state]
        if not states:
            del self._states[ts]
            _remove(self._sorted, ts)
        self._reindex(ts, before, states[max(states)] if states else None)

    def _reindex(self, ts: str, before: Instant | None, after: Instant | None) -> None:
        if before is not None:
            _remove(self._by_action[before.action], ts)
            if not before.is_completed:
                _remove(self._pending, ts)
        if after is not None:
            _insert(self._by_action.setdefault(after.action, []), ts)
            if not after.is_completed:
                _insert(self._pending, ts)

    # --- queries ---------------------------------------------------------------------------------
    def get(self, timestamp: str) -> Instant | None:
        """The instant at `timestamp` in its latest state."""
        states = self._states.get(timestamp)
        return states[max(states)] if states else None

    def _at(self, timestamp: str) -> Instant:
        """The instant at an instant time the indexes hold, in its latest state."""
        states = self._states[timestamp]
        return states[max(states)]

    def states_of(self, timestamp: str) -> dict[State, Instant]:
        return dict(self._states.get(timestamp, {}))

    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants())

    def __len__(self) -> int:
        return len(self._sorted)

    def footprint(self) -> int:
        """The memory this timeline holds, estimated: its cached instant files, and per instant file known
        its name, parsed instant and index entries (NAME_BYTES, measured with tracemalloc)."""
        return sum(map(len, self._content.values())) + NAME_BYTES * len(self._names) + TIMELINE_BYTES

    def instants(self) -> list[Instant]:
        """Every instant in its latest state, ordered by instant time (O(timeline): not for the planner)."""
        if self._latest is None:
            self._latest = [self._at(ts) for ts in self._sorted]
        return list(self._latest)

    def iter_instants(self, actions: Iterable[str] | None = None, *, after: str | None = None,
                      since: str | None = None, before: str | None = None, reverse: bool = False) -> Iterator[Instant]:
        """Instants in their latest state, of `actions` (all if None), with instant times after `after`
        (exclusive), from `since` (inclusive) and before `before` (exclusive), ascending or `reverse`d.
        Lazy: a caller that stops early pays for what it took."""
        lists = [self._sorted] if actions is None else [self._by_action.get(a, ()) for a in set(actions)]
        runs = []
        for times in lists:
            lo = 0
            if after is not None:
                lo = bisect.bisect_right(times, after)
            if since is not None:
                lo = max(lo, bisect.bisect_left(times, since))
            hi = len(times) if before is None else bisect.bisect_left(times, before)
            if lo < hi:
                runs.append(map(times.__getitem__, range(hi - 1, lo - 1, -1) if reverse else range(lo, hi)))
        if not runs:
            return iter(())
        merged = runs[0] if len(runs) == 1 else heapq.merge(*runs, reverse=reverse)
        return (self._at(ts) for ts in merged)

    def last_of(self, actions: Iterable[str], *, completed: bool = False) -> Instant | None:
        """The latest instant of `actions` (the latest completed one if `completed`)."""
        return next((i for i in self.iter_instants(actions, reverse=True) if i.is_completed or not completed), None)

    def latest(self) -> Instant | None:
        return self.get(self._sorted[-1]) if self._sorted else None

    def all_files(self) -> list[Instant]:
        """Every instant file (all states), ordered by instant time then state."""
        return sorted(i for states in self._states.values() for i in states.values())

    def completed(self, actions: Iterable[str] | None = None, *, after: str | None = None) -> list[Instant]:
        """Completed instants of `actions` (all if None), after `after` if given, ascending."""
        return [i for i in self.iter_instants(actions, after=after) if i.is_completed]

    def pending(self, actions: Iterable[str] | None = None) -> list[Instant]:
        """Requested or inflight instants of `actions` (all if None), ascending. Costs the number of pending
        instants, not the timeline's length."""
        acts = set(actions) if actions else None
        return [i for i in map(self._at, self._pending) if acts is None or i.action in acts]

    def completed_writes(self) -> list[Instant]:
        """Completed commits, delta commits and replace commits (compactions complete as commits)."""
        return self.completed(WRITE_ACTIONS)

    def pending_compactions(self) -> list[Instant]:
        return self.pending((Action.COMPACTION,))

    def pending_replaces(self) -> list[Instant]:
        """Pending clustering (v8 `clustering`) and v6 pending `replacecommit` (clustering or overwrite)."""
        return self.pending((Action.CLUSTERING, Action.REPLACE_COMMIT))

    def inflight_writes(self) -> list[Instant]:
        """Writer instants (commit, deltacommit) requested or inflight: running or failed writes."""
        return self.pending((Action.COMMIT, Action.DELTA_COMMIT))

    def is_completed(self, timestamp: str) -> bool:
        return State.COMPLETED in self._states.get(timestamp, {})

    def start(self) -> str | None:
        """Where the active timeline starts for readers (Hudi's isBeforeTimelineStarts): the first completed write
        or pending compaction that no savepoint keeps (archival may go beyond a savepoint, leaving its commit
        before a hole). An instant older than it and absent from the active timeline was archived, so it
        completed."""
        for inst in self.iter_instants(WRITE_ACTIONS + _COMPACTIONS):
            if inst.timestamp in self._savepoints:
                continue
            if inst.is_completed or inst.action in _COMPACTIONS:
                return inst.timestamp
        return None

    def committed_rule(self) -> Callable[[str], bool]:
        """Whether the instant at a time committed: completed on the active timeline, or archived (absent from it
        and older than its `start`, Hudi's containsOrBeforeTimelineStarts; a pending instant never is). The start
        is taken once, when the rule is made."""
        start = self.start()

        def committed(timestamp: str) -> bool:
            states = self._states.get(timestamp)
            if states:
                return State.COMPLETED in states
            return start is not None and timestamp < start
        return committed

    def archived_completion_time(self, timestamp: str) -> str | None:
        """v8+: when an archived instant completed, from Hudi's archived (LSM) timeline; None if it lacks it."""
        return self._archived_timeline().completion_time(timestamp)

    def archived_rows(self, low: str, actions: tuple[str, ...], column: str,
                      max_files: int | None = None) -> Iterator[ArchivedRow]:
        """v8+: the archived instants of `actions` of the LSM files reaching `low` or later (the newest
        `max_files`), newest first, each with its `column` ("metadata": the completed file's bytes; "plan": the
        requested plan's)."""
        return self._archived_timeline().rows_from(low, actions, column, max_files)

    def _archived_timeline(self) -> ArchivedTimeline:
        if self._archived is None:
            self._archived = ArchivedTimeline(self.storage, self.dir)
        return self._archived

    def last_completed(self) -> Instant | None:
        return next((i for i in self.iter_instants(reverse=True) if i.is_completed), None)

    def completion_time(self, instant: Instant) -> str | None:
        """Completion time: from the file name on v8+; on v6, the completed file's modification time
        (Hudi 0.x keeps none; TMS only uses it for display)."""
        done = self._states.get(instant.timestamp, {}).get(State.COMPLETED)
        if done is None:
            return None
        if done.completion_time:
            return done.completion_time
        info = self.storage.info(f"{self.dir}/{instant_file_name(done, self.config.version)}")
        if not info.mtime:
            return None
        return new_instant_time(self.config.timeline_zone, datetime.fromtimestamp(info.mtime, UTC))

    def savepoints(self) -> list[Instant]:
        """The completed savepoints, ascending (each has the instant time of the commit it keeps)."""
        return [states[State.COMPLETED] for ts, states in sorted(self._savepoints.items())
                if State.COMPLETED in states]

    def savepoint_files(self, timestamp: str) -> dict[State, Instant]:
        """The savepoint files (inflight, completed) at `timestamp`."""
        return dict(self._savepoints.get(timestamp, {}))

    @contextmanager
    def pinned(self, *, listed: bool = False) -> Iterator[Timeline]:
        """List the timeline once and let every read inside the block use that listing: a planning pass
        makes many library calls that would each list the folder again (O(timeline) each). Transitions
        still list it, so writes stay as safe as outside. `listed`: the caller has just reloaded it (a
        transaction does, under the lock), so it is not listed again (on an object store, a LIST per 1,000
        instant files)."""
        if not listed:
            self.reload()
        self._pinned += 1
        try:
            yield self
        finally:
            self._pinned -= 1

    # --- contents --------------------------------------------------------------------------------
    def path_of(self, instant: Instant) -> str:
        return f"{self.dir}/{instant_file_name(instant, self.config.version)}"

    def read(self, instant: Instant, *, keep: bool = True) -> bytes:
        """Bytes of one instant file; completed files are cached (they never change), up to CACHED_FILE_BYTES each,
        unless not to `keep` (a read its caller keeps the outcome of)."""
        name = instant_file_name(instant, self.config.version)
        cached = self._content.get(name)
        if cached is not None:
            return cached
        path = f"{self.dir}/{name}"
        try:
            data = self.storage.read_bytes(path)
        except FileNotFoundError:
            raise InstantVanishedError(f"instant file {name} vanished (rolled back or archived?)") from None
        if len(data) > CACHED_FILE_BYTES:
            return data  # a giant table's compaction commit: neither kept nor copied (its parse errors name no file)
        data = FileBytes(data, path)  # a parser refusing it names the file
        if instant.is_completed and keep:
            self._content[name] = data
        return data

    def read_plan(self, timestamp: str) -> bytes:
        """The requested file of an instant: a compaction, clustering, clean or rollback plan."""
        req = self._states.get(timestamp, {}).get(State.REQUESTED)
        if req is None:
            raise HudiError(f"no requested instant {timestamp} on the timeline")
        return self.read(req)

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        return parse_commit_metadata(self.read(instant))

    def metadata_of_active(self, instants: Iterable[Instant]) -> Iterator[tuple[Instant, CommitMetadata]]:
        """Each of `instants` with its commit metadata, leaving out one whose file vanished since the timeline
        was listed: an archiver (a writer's, or TMS's own task) moved it to the archived timeline meanwhile, and
        a reader of the active timeline reads it as if it had been archived before the listing."""
        for instant in instants:
            try:
                yield instant, self.commit_metadata(instant)
            except InstantVanishedError:
                continue

    def commit_partitions(self, instant: Instant) -> set[str]:
        """The partitions a completed write names (written to or replaced in), its statistics left unread. The file
        is not kept: its callers keep what it names (committed_partitions, once per instant)."""
        return read_commit_partitions(self.read(instant, keep=False))

    def check_latest_write(self) -> None:
        """Read the latest completed write's metadata, as readers and table services will: a truncated or
        corrupt file raises MetadataFormatError naming it (found when the table is read, not when a service
        next needs it). A completed write always says what it wrote: an empty file is a truncated one."""
        latest = self.last_of(WRITE_ACTIONS, completed=True)
        if latest is None:
            return
        data = self.read(latest)
        if not data.strip():
            raise MetadataFormatError(f"{self.path_of(latest)}: empty (a completed {latest.action} names the "
                                      "files it wrote): truncated?")
        parse_commit_metadata(data)

    # --- transitions -----------------------------------------------------------------------------
    def _write(self, instant: Instant, content: bytes) -> Instant:
        name = instant_file_name(instant, self.config.version)
        self.storage.write_atomic(f"{self.dir}/{name}", content)
        self._names.add(name)
        self._put_state(instant)
        self._latest = None
        return instant

    def _write_savepoint(self, instant: Instant, content: bytes) -> Instant:
        name = instant_file_name(instant, self.config.version)
        self.storage.write_atomic(f"{self.dir}/{name}", content)
        self._names.add(name)
        self._savepoints.setdefault(instant.timestamp, {})[instant.state] = instant
        self._max_time = max(self._max_time, instant.completion_time or "")
        return instant

    def write_savepoint(self, timestamp: str, content: bytes) -> Instant:
        """A savepoint of the completed commit at `timestamp`, as Hudi writes one: `T.savepoint.inflight`
        (empty), then the completed `T.savepoint` holding `content`."""
        self.reload(force=True, full=True)  # rare: also sees savepoints older than any floor (see reload)
        if not self.is_completed(timestamp):
            raise InstantConflictError(f"instant {timestamp} is not a completed instant: nothing to savepoint")
        if self._savepoints.get(timestamp):
            raise InstantConflictError(f"instant {timestamp} already has a savepoint")
        self._write_savepoint(Instant(timestamp, State.INFLIGHT, Action.SAVEPOINT), b"")
        completion = self.new_instant_time() if self.config.traits.completion_times else None
        return self._write_savepoint(Instant(timestamp, State.COMPLETED, Action.SAVEPOINT, completion), content)

    def delete_savepoint(self, timestamp: str) -> None:
        """Remove the savepoint at `timestamp`, completed file first (as Hudi's savepoint delete), so that
        it never looks completed without its inflight file."""
        self.reload(force=True, full=True)
        states = self._savepoints.get(timestamp)
        if not states:
            raise InstantConflictError(f"no savepoint at {timestamp}")
        for state in (State.COMPLETED, State.INFLIGHT, State.REQUESTED):
            inst = states.get(state)
            if inst is not None:
                self.storage.delete(self.path_of(inst))
        self.reload(force=True)

    def delete_instant(self, timestamp: str) -> None:
        """Remove every file of the instant at `timestamp`, the completed one first so that readers stop
        reading it before it looks pending: what a restore does with each instant it rolls back."""
        self.reload(force=True, full=True)
        states = self._states.get(timestamp, {})
        for state in (State.COMPLETED, State.INFLIGHT, State.REQUESTED):
            inst = states.get(state)
            if inst is not None:
                self.storage.delete(self.path_of(inst))
        self.reload(force=True)

    def create_requested(self, action: str, content: bytes = b"", timestamp: str | None = None) -> Instant:
        """A new requested instant. Refuses an instant time the timeline already has."""
        self.reload(force=True)
        ts = timestamp or self.new_instant_time()
        if ts in self._states:
            raise InstantConflictError(f"instant {ts} already exists on the timeline")
        return self._write(Instant(ts, State.REQUESTED, action), content)

    def transition_to_inflight(self, requested: Instant, content: bytes = b"") -> Instant:
        self.reload(force=True)
        states = self._states.get(requested.timestamp, {})
        if State.REQUESTED not in states:
            raise InstantConflictError(f"instant {requested.timestamp} is not requested")
        if State.INFLIGHT in states or State.COMPLETED in states:
            state = states[max(states)].state.name.lower()
            raise InstantConflictError(f"instant {requested.timestamp} is already {state}")
        return self._write(Instant(requested.timestamp, State.INFLIGHT, requested.action), content)

    def complete(self, inflight: Instant, content: bytes, completion_time: str | None = None) -> Instant:
        """Write the completed file. Never overwrites or duplicates a completed instant."""
        self.reload(force=True)
        states = self._states.get(inflight.timestamp, {})
        if State.COMPLETED in states:
            raise InstantConflictError(f"instant {inflight.timestamp} is already completed")
        if State.INFLIGHT not in states:
            raise InstantConflictError(f"instant {inflight.timestamp} is not inflight")
        action = states[State.INFLIGHT].action
        done = Instant(inflight.timestamp, State.INFLIGHT, action).with_state(
            State.COMPLETED,
            (completion_time or self.new_instant_time()) if self.config.traits.completion_times else None)
        return self._write(done, content)

    def rewrite_requested(self, requested: Instant, content: bytes) -> None:
        """Replace a requested plan's content (plan compensation). Allowed only while the instant is
        requested and nothing else: an inflight or completed plan is never touched."""
        self.reload(force=True)
        states = self._states.get(requested.timestamp, {})
        if set(states) != {State.REQUESTED}:
            state = self.get(requested.timestamp)
            raise InstantConflictError(
                f"plan {requested.timestamp} is {state.state.name.lower() if state else 'gone'}; it must not change")
        name = instant_file_name(states[State.REQUESTED], self.config.version)
        self.storage.write_atomic(f"{self.dir}/{name}", content, overwrite=True)

    def delete_pending(self, timestamp: str) -> None:
        """Remove a pending instant's files (inflight first, so it never looks requested-only while a
        reader sees a dangling inflight), as Hudi does when it finishes a rollback."""
        self.reload(force=True)
        states = self._states.get(timestamp, {})
        if State.COMPLETED in states:
            raise InstantConflictError(f"instant {timestamp} is completed; it is rolled back, not deleted")
        for state in (State.INFLIGHT, State.REQUESTED):
            inst = states.get(state)
            if inst is not None:
                self.storage.delete(self.path_of(inst))
        self.reload(force=True)

    def unschedule(self, timestamp: str) -> None:
        """Remove a requested plan that nothing has started (as Hudi's `compaction unschedule` does): only
        while it is requested and nothing else, so a plan a writer began running is never touched."""
        self.reload(force=True)
        states = self._states.get(timestamp, {})
        if set(states) != {State.REQUESTED}:
            state = self.get(timestamp)
            raise InstantConflictError(
                f"plan {timestamp} is {state.state.name.lower() if state else 'gone'}: only a requested plan is "
                "unscheduled")
        self.storage.delete(self.path_of(states[State.REQUESTED]))
        self.reload(force=True)

    def revert_to_requested(self, timestamp: str) -> None:
        """Remove the inflight file of a pending instant, keeping its requested plan: what Hudi does after
        rolling back a failed compaction or clustering attempt, so the plan can run again."""
        self.reload(force=True)
        states = self._states.get(timestamp, {})
        if State.COMPLETED in states:
            raise InstantConflictError(f"instant {timestamp} is completed; it cannot go back to requested")
        if State.REQUESTED not in states:
            raise InstantConflictError(f"instant {timestamp} has no requested plan to go back to")
        inflight = states.get(State.INFLIGHT)
        if inflight is not None:
            self.storage.delete(self.path_of(inflight))
        self.reload(force=True)

    def new_instant_time(self) -> str:
        """A fresh instant time (wall-clock time in the table's timeline zone) later than every instant on the
        timeline (and than its completions), from `time_generator` (a transaction installs the table's
        skew-waiting generator while it holds the lock)."""
        ts = self.time_generator.next_time(self.config.timeline_zone, self._max_time)
        self._max_time = ts
        return ts


WRITE_ACTIONS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)
_COMPACTIONS = (Action.COMPACTION, Action.LOG_COMPACTION)
# Instants whose files appear, or that remove files, behind any tail key: the whole folder is listed again.
_ROLLING_BACK = frozenset({Action.ROLLBACK, Action.RESTORE})
_REMOVING_ACTIONS = _ROLLING_BACK | {Action.SAVEPOINT}


def _insert(times: list[str], ts: str) -> None:
    if not times or ts > times[-1]:
        times.append(ts)  # the usual case: a new instant is the latest
    else:
        bisect.insort(times, ts)


def _remove(times: list[str], ts: str) -> None:
    i = bisect.bisect_left(times, ts)
    if i < len(times) and times[i] == ts:
        del times[i]
