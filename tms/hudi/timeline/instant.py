"""Instants: (instant time, action, state[, completion time]) and their file names in v6 and v8+ timelines."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from enum import IntEnum, StrEnum

from ..errors import HudiError
from ..table.version_traits import TableVersionTraits


class Action(StrEnum):
    """Hudi's timeline actions, as instant file names spell them (`<ts>.deltacommit.inflight`)."""
    COMMIT = "commit"
    DELTA_COMMIT = "deltacommit"
    REPLACE_COMMIT = "replacecommit"
    COMPACTION = "compaction"
    LOG_COMPACTION = "logcompaction"
    CLUSTERING = "clustering"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    RESTORE = "restore"
    SAVEPOINT = "savepoint"
    INDEXING = "indexing"


ACTIONS = tuple(Action)
# Pending actions that complete under another action's name.
COMPLETED_ACTION: dict[str, str] = {Action.COMPACTION: Action.COMMIT, Action.LOG_COMPACTION: Action.DELTA_COMMIT,
                                    Action.CLUSTERING: Action.REPLACE_COMMIT}
# Actions that write data files a reader sees.
WRITE_ACTIONS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION, Action.LOG_COMPACTION,
                 Action.CLUSTERING)

# yyyyMMddHHmmss[SSS]; a v6 metadata table's own operations add a 3-digit suffix to the data instant they
# follow (HoodieTableMetadataUtil.OperationSuffix: compaction T + "001", rollback R + "006", ...).
_TS = re.compile(r"^\d{14}(?:\d{3}){0,2}$")


class State(IntEnum):
    REQUESTED = 0
    INFLIGHT = 1
    COMPLETED = 2


def is_valid_instant_time(ts: str) -> bool:
    return bool(_TS.match(ts))


def instant_wall_clock(ts: str) -> datetime:
    """The wall-clock time (naive) instant time `ts` writes; HudiError for a malformed one, ValueError for one
    that is no calendar time."""
    if not is_valid_instant_time(ts):
        raise HudiError(f"malformed instant time {ts!r}: expected yyyyMMddHHmmssSSS")
    return datetime.strptime(ts[:14], "%Y%m%d%H%M%S").replace(microsecond=int(ts[14:17] or 0) * 1000)


def format_wall_clock(wall: datetime) -> str:
    """`yyyyMMddHHmmssSSS` of a wall-clock time."""
    return wall.strftime("%Y%m%d%H%M%S") + f"{wall.microsecond // 1000:03d}"


def new_instant_time(zone: tzinfo, now: datetime | None = None) -> str:
    """The instant time of `now` (default: the clock): its wall-clock time in `zone`, the table's timeline
    zone (TableConfig.timeline_zone)."""
    return format_wall_clock((now or datetime.now(UTC)).astimezone(zone))


def instant_to_datetime(ts: str, zone: tzinfo) -> datetime:
    """The moment (in UTC) instant time `ts`, a wall-clock time in `zone`, names. A wall-clock time that a
    daylight-saving change skips or repeats reads as Java's `LocalDateTime.atZone` reads it: a skipped one
    with the offset before the gap (so it lands as far past the gap), a repeated one at its first occurrence
    (fold 0)."""
    return instant_wall_clock(ts).replace(tzinfo=zone).astimezone(UTC)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def millis_from_instant(ts: str, zone: tzinfo) -> int:
    """Java's `parseDateFromInstantTime(ts).getTime()`: epoch milliseconds of the instant time in `zone`."""
    return (instant_to_datetime(ts, zone) - _EPOCH) // timedelta(milliseconds=1)


@dataclass(frozen=True, order=True)
class Instant:
    """One instant file. `action` is the pending action name (compaction, clustering) until it completes,
    when it becomes the completed action (commit, replacecommit), as Hudi names the files."""

    timestamp: str
    state: State
    action: str
    completion_time: str | None = field(default=None, compare=False)

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def is_requested(self) -> bool:
        return self.state is State.REQUESTED

    @property
    def is_inflight(self) -> bool:
        return self.state is State.INFLIGHT

    def file_name(self, table_version: int) -> str:
        return instant_file_name(self, table_version)

    def with_state(self, state: State, completion_time: str | None = None) -> Instant:
        action = COMPLETED_ACTION.get(self.action, self.action) if state is State.COMPLETED else self.action
        return Instant(self.timestamp, state, action, completion_time)

    def __str__(self) -> str:
        done = f" (completed {self.completion_time})" if self.completion_time else ""
        return f"{self.timestamp} {self.action} {self.state.name}{done}"


def instant_file_name(instant: Instant, table_version: int) -> str:
    ts, action = instant.timestamp, instant.action
    traits = TableVersionTraits(table_version)
    if instant.state is State.REQUESTED:
        if not traits.clustering_action and action == Action.CLUSTERING:
            action = Action.REPLACE_COMMIT
        return f"{ts}.{action}.requested"
    if instant.state is State.INFLIGHT:
        if not traits.clustering_action and action == Action.CLUSTERING:
            action = Action.REPLACE_COMMIT
        return f"{ts}.inflight" if action == Action.COMMIT else f"{ts}.{action}.inflight"
    if traits.completion_times:
        if not instant.completion_time:
            raise HudiError(f"completed instant {ts} of a v8+ table needs a completion time")
        return f"{ts}_{instant.completion_time}.{action}"
    return f"{ts}.{action}"


_NAME = re.compile(r"^(\d{14}(?:\d{3}){0,2})(?:_(\d{14,17}))?\.([a-z]+)(?:\.(requested|inflight))?$")


def parse_instant_file_name(name: str) -> Instant | None:
    """The instant a timeline file names, or None for files that are not instants
    (hoodie.properties, folders, `*.commit.crc`, temp files)."""
    m = _NAME.match(name)
    if not m:
        return None
    ts, completion, action, suffix = m.groups()
    if action == "inflight" and suffix is None:  # `T.inflight` is an inflight commit
        return Instant(ts, State.INFLIGHT, Action.COMMIT)
    if action not in ACTIONS:
        return None
    if suffix == "requested":
        return Instant(ts, State.REQUESTED, action)
    if suffix == "inflight":
        return Instant(ts, State.INFLIGHT, action)
    return Instant(ts, State.COMPLETED, action, completion)
