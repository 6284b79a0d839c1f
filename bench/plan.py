"""Planner benchmark: (1) the latency of handling one commit event on a table whose timeline holds 100 and
10,000 instants, and (2) the time `tms planner` processes take to absorb a burst of 10,000 events over
1,000 registered tables.

    python bench/plan.py [--events 200] [--tables 1000] [--events-per-table 10] [--planners 2] [--version 8]

(1) The long timelines are written directly as instant files (delta commits with small commit metadata and
a compaction every five, as a MERGE_ON_READ writer leaves them; no data files). After the planner first
sees the table, each new delta commit's files are written and its callback event stored, and the
planner's `handle_events` is timed. With Hudi's default trigger (5 delta commits) every fifth event finds a
compaction (and a clean) due and runs a planning pass, which reloads the timeline and builds the
file-system view; the others are decided from the table's digest alone. Both kinds are reported apart.
The planner watches the timeline folders (Linux inotify, TMS_PLANNER_WATCH_TIMELINES), so a pass takes
the folder's changes instead of listing it; the same events are also timed on a planner that lists the
folder on every pass, as it does on object stores and network filesystems, to show what the feed saves.

(2) A template table is written by the writer (one insert and nine upserts, so a compaction is due) and
copied per table; the tables are registered, `--planners` planner processes started, then the burst is
stored (every table's ten callback events, in ten rounds over all tables). Absorbed: every event
processed and every table's compaction recorded as a task.

Goals (issue 4): per-event latency ratio 10,000 / 100 instants <= 1.5; the burst planned within 60 s on
2 cores. PostgreSQL: TMS_DATABASE_URL's server if set, else the local or a throwaway one (tms.db.testing),
in a scratch database dropped at the end."""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402

from planner.runner import Planner  # noqa: E402
from service.table_view import registration_facts  # noqa: E402
from tms.db import Database, EventRepo, InstanceRepo, NewEvent, TableRepo, TaskRepo  # noqa: E402
from tms.db.testing import scratch_database  # noqa: E402
from tms.hudi.table.hudi_table import HudiTable  # noqa: E402
from tms.hudi.table.writer import HudiWriter  # noqa: E402
from tms.hudi.timeline.instant import Action, Instant, State, instant_file_name, new_instant_time  # noqa: E402
from tms.hudi.timeline.serde import CommitMetadata, serialize_commit_metadata  # noqa: E402
from tms.planning.decisions import PlannerOptions  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("ts", pa.int64()), ("city", pa.string())])
OPTIONS = PlannerOptions(services=frozenset({"compaction", "clean", "rollback"}), clean_commits=5)
VERSION = 8


# --- (1) latency per event ------------------------------------------------------------------------
class TimelineWriter:
    """Writes instant files straight into a timeline, one millisecond-spaced instant after another."""

    def __init__(self, table: HudiTable, start: datetime):
        self.dir = Path(table.storage.full(table.config.timeline_dir))
        self.clock = start
        self.zone = table.config.timeline_zone
        self.meta = serialize_commit_metadata(CommitMetadata(partition_to_write_stats={}, operation_type="UPSERT"),
                                              VERSION)

    def _tick(self) -> str:
        self.clock += timedelta(milliseconds=2)
        return new_instant_time(self.zone, self.clock)

    def instant(self, pending_action: str, completed_action: str) -> str:
        ts = self._tick()
        done = self._tick()
        for inst, content in ((Instant(ts, State.REQUESTED, pending_action), b""),
                              (Instant(ts, State.INFLIGHT, pending_action), b""),
                              (Instant(ts, State.COMPLETED, completed_action, done), self.meta)):
            (self.dir / instant_file_name(inst, VERSION)).write_bytes(content)
        return ts

    def history(self, count: int) -> None:
        """`count` instants: four delta commits, then a compaction, over and over (ending with one)."""
        for n in range(count):
            if (n + 1) % 5 == 0 or n == count - 1:
                self.instant(Action.COMPACTION, Action.COMMIT)
            else:
                self.instant(Action.DELTA_COMMIT, Action.DELTA_COMMIT)


def _new_table(path: Path) -> HudiTable:
    HudiWriter.create_table(str(path), table_type="MERGE_ON_READ", version=VERSION, key=["id"], ordering=["ts"],
                            partition=["city"], schema=SCHEMA)
    return HudiTable.load(str(path))


class LatencyRun:
    """One table with a timeline of `instants` instants, registered, first seen by its own planner."""

    def __init__(self, db: Database, root: Path, instants: int, *, watch: bool = True):
        self.db = db
        self.table = _new_table(root / f"t{instants}{'' if watch else '-listed'}")
        self.writer = TimelineWriter(self.table, datetime.now(UTC) - timedelta(hours=1))
        self.writer.history(instants)
        with db.transaction() as session:
            self.table_id = TableRepo(session).register(base_path=self.table.base_path,
                                                        **registration_facts(self.table)).id
        self.planner = Planner(db, OPTIONS, watch_timelines=watch)
        self.times: dict[str, list[float]] = {"first sight": [], "decided from the digest": [], "planning pass": []}
        self.commit_event("first sight")

    def commit_event(self, kind: str | None = None) -> None:
        """A new delta commit on the timeline and its callback event; the time the planner takes on it."""
        ts = self.writer.instant(Action.DELTA_COMMIT, Action.DELTA_COMMIT)
        with self.db.transaction() as session:
            EventRepo(session).add_many([NewEvent(self.table_id, ts, Action.DELTA_COMMIT, "completed",
                                                  "hudi_callback")])
        before = self._planned_at()
        started = time.perf_counter()
        self.planner.handle_events(self.table_id)
        elapsed = time.perf_counter() - started
        self.times[kind or ("planning pass" if self._planned_at() != before else "decided from the digest")] \
            .append(elapsed)

    def _planned_at(self) -> datetime | None:
        """When the planner last ran a planning pass on the table (which reloads its timeline)."""
        with self.db.transaction() as session:
            return TableRepo(session).get(self.table_id).planned_at


def event_latency(db: Database, root: Path, events: int) -> dict[tuple[int, bool], dict[str, list[float]]]:
    """Per-event times on the short and the long timeline, with and without the change feed, their events
    interleaved so that all four see the same machine."""
    runs = {(n, watch): LatencyRun(db, root, n, watch=watch) for watch in (True, False) for n in (100, 10_000)}
    for _ in range(events):
        for run in runs.values():
            run.commit_event()
    for run in runs.values():
        run.planner.close()
    return {key: run.times for key, run in runs.items()}


def _ms(values: list[float], q: float = 0.5) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report_latency(all_results: dict[tuple[int, bool], dict[str, list[float]]]) -> None:
    results = {n: times for (n, watch), times in all_results.items() if watch}
    small, large = sorted(results)
    print(f"(1) latency of one commit event (MOR v{VERSION}, Hudi's default policy), ms:")
    print(f"    {'':26} {'instants':>9} {'events':>7} {'median':>8} {'p90':>8} {'mean':>8}")
    for kind in ("decided from the digest", "planning pass", "all events", "first sight"):
        for n in (small, large):
            values = results[n]["decided from the digest"] + results[n]["planning pass"] if kind == "all events" \
                else results[n][kind]
            print(f"    {kind:26} {n:>9,} {len(values):>7} {_ms(values):8.2f} {_ms(values, 0.9):8.2f} "
                  f"{1000 * statistics.fmean(values):8.2f}")
    for kind in ("decided from the digest", "planning pass"):
        a, b = results[small][kind], results[large][kind]
        print(f"    ratio {large:,}/{small:,} instants, {kind}: median {_ms(b) / _ms(a):.2f}, "
              f"mean {statistics.fmean(b) / statistics.fmean(a):.2f}  (goal <= 1.5)")
    every = {n: results[n]["decided from the digest"] + results[n]["planning pass"] for n in results}
    print(f"    ratio {large:,}/{small:,} instants, all events: median {_ms(every[large]) / _ms(every[small]):.2f}, "
          f"mean {statistics.fmean(every[large]) / statistics.fmean(every[small]):.2f}  (goal <= 1.5)")
    listed = {n: all_results[(n, False)]["planning pass"] for n in (small, large)}
    print(f"    without the change feed (the timeline folder listed on every pass, as on object stores): planning "
          f"pass median {_ms(listed[small]):.2f} ms at {small:,} and {_ms(listed[large]):.2f} ms at {large:,} "
          f"instants, ratio {_ms(listed[large]) / _ms(listed[small]):.2f}")


# --- (2) a burst over many tables -----------------------------------------------------------------
def template_table(path: Path, commits: int) -> list[str]:
    """A table with `commits` delta commits (an insert, then upserts); its instants."""
    writer = HudiWriter.create_table(str(path), table_type="MERGE_ON_READ", version=VERSION, key=["id"],
                                     ordering=["ts"], partition=["city"], schema=SCHEMA)
    rows = [{"id": i, "name": f"n{i}", "ts": 0, "city": ("sf", "nyc", "sp")[i % 3]} for i in range(30)]
    instants = [writer.write(rows, "insert").instant]
    for n in range(1, commits):
        instants.append(writer.write([{**r, "ts": n} for r in rows[:9]], "upsert").instant)
    return instants


def _start_planner(url: str, log: Path) -> subprocess.Popen:
    env = {**os.environ, "TMS_DATABASE_URL": url, "TMS_MIGRATE_ON_START": "false", "PYTHONPATH": str(REPO),
           "TMS_PLANNER_SCAN_SECONDS": "3600", "TMS_PLANNER_POLL_SECONDS": "0.1"}
    return subprocess.Popen([sys.executable, "-m", "tms.cli", "planner"], cwd=REPO, env=env,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)


def burst(db: Database, url: str, root: Path, tables: int, per_table: int, planners: int) -> None:
    template = root / "template"
    instants = template_table(template, per_table)
    facts = registration_facts(HudiTable.load(str(template)))
    started = time.perf_counter()
    paths = []
    for n in range(tables):
        paths.append(root / "tables" / f"t{n:04d}")
        shutil.copytree(template, paths[-1])
    print(f"(2) {tables:,} tables of {per_table} delta commits copied in {time.perf_counter() - started:.1f} s; "
          f"{planners} planner process(es) on {os.cpu_count()} core(s)")

    procs = [_start_planner(url, root / f"planner-{n}.log") for n in range(planners)]
    try:
        _wait(lambda: _planners_up(db) == planners, procs, 120)
        with db.transaction() as session:  # registered after the planners' first scan: only events bring them
            repo = TableRepo(session)
            ids = [repo.register(**{**facts, "base_path": str(p)}).id for p in paths]
        started = time.perf_counter()
        for ts in instants:  # the burst: each commit's callbacks of every table
            with db.transaction() as session:
                EventRepo(session).add_many([NewEvent(t, ts, Action.DELTA_COMMIT, "completed", "hudi_callback")
                                             for t in ids])
        stored = time.perf_counter() - started
        _wait(lambda: _absorbed(db, tables), procs, 600)
        elapsed = time.perf_counter() - started
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=60)
    events = tables * per_table
    print(f"    {events:,} events stored in {stored:.1f} s; all processed and {tables:,} compactions recorded "
          f"in {elapsed:.1f} s from the first event (goal <= 60 s): {events / elapsed:,.0f} events/s, "
          f"{tables / elapsed:,.0f} tables/s")


def _planners_up(db: Database) -> int:
    with db.transaction() as session:
        return sum("planner" in i.roles for i in InstanceRepo(session).list())


def _absorbed(db: Database, tables: int) -> bool:
    with db.transaction() as session:
        if EventRepo(session).tables_with_unprocessed(limit=1):
            return False
        return TaskRepo(session).counts_by_state().get("RUNNABLE", 0) >= tables


def _wait(condition, procs, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if any(p.poll() is not None for p in procs):
            raise RuntimeError("a planner process exited")
        if time.monotonic() > deadline:
            raise TimeoutError(f"not done within {timeout:.0f} s")
        time.sleep(0.05)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=200, help="timed events per timeline length")
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--events-per-table", type=int, default=10)
    ap.add_argument("--planners", type=int, default=2, help="planner processes absorbing the burst")
    ap.add_argument("--version", type=int, choices=(6, 8), default=8, help="table version of every table")
    args = ap.parse_args()
    global VERSION
    VERSION = args.version

    with tempfile.TemporaryDirectory(prefix="tms-bench-plan-") as tmp, scratch_database() as url:
        root = Path(tmp)
        db = Database(url)
        try:
            report_latency(event_latency(db, root, args.events))
            burst(db, url, root, args.tables, args.events_per_table, args.planners)
        finally:
            db.dispose()


if __name__ == "__main__":
    main()
