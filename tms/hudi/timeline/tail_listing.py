"""When a long-lived reader of a timeline (the planner's cached tables) may list only the timeline folder's
tail — the names after a key, S3's `start-after` — instead of the whole folder, whose listing grows with the
timeline (one request per 1,000 files on S3).

Instant files are named by their instant time, so a new instant's files sort after the instants already
seen, but not every file that appears does, nor is every removal at the tail:
- the inflight and completed files of a pending instant carry its (older) instant time, also Hudi 1.x's
  `<start>_<completion>.<action>`: the key stays at or before the oldest pending instant seen;
- a writer's requested file can appear with an instant time older than the newest seen: its clock lags, or it
  wrote the file a while after generating the time. Hudi itself assumes such lateness is bounded (its instant
  times wait out a configured clock skew): the key stays `lateness` behind the newest time seen, and a file
  later than that is assumed not to appear;
- a savepoint is named by the commit it keeps, and archival, restore and the rollback of a completed
  instant remove files behind the key. A tail listing cannot see those: decisions that depend on savepoints
  (clean, rollback, the savepoint policy) list from an older key (`Timeline.reload(exact=True)`): Hudi refuses
  a savepoint of a commit older than the latest clean's earliest commit to retain, so the savepoints made
  since the last such listing keep commits at or after that bound (the whole folder is listed where there is
  none, or a newer clean lowered it); making or deleting a savepoint and a restore list the whole folder; the
  timeline lists it whenever the tail shows a rollback or restore instant (new, or pending: its removals may
  happen at any time until it completes), and one reload in `full_every` lists it anyway."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from .instant import format_wall_clock, instant_wall_clock, is_valid_instant_time


@dataclass(frozen=True)
class TailListing:
    lateness: timedelta = timedelta(hours=1)  # how late a requested file may appear after its instant time
    full_every: int = 50                      # one reload in this many lists the whole folder

    def start_after(self, newest_time: str, oldest_pending: str | None) -> str | None:
        """The key to list after: at or before the oldest pending instant time and `lateness` before the
        newest time seen, cut to its seconds (an instant time of 14 digits, older Hudi's, then sorts after
        it too); None if the newest time is unknown (the whole folder is listed)."""
        if not is_valid_instant_time(newest_time):
            return None
        horizon = format_wall_clock(instant_wall_clock(newest_time) - self.lateness)
        key = horizon if oldest_pending is None else min(horizon, oldest_pending)
        return key[:14]
