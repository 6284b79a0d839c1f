"""Scale benchmark (issue 14, item 4): 100,000 registered tables on one PostgreSQL.

    python bench/scale.py [--tables 100000] [--rate 1000] [--seconds 60] [--planners 2] [--changed 1000]
                          [--due 0.01]

The farm: `--tables` small real tables on disk (their `hoodie.properties` and timeline folder, see
tests/scale/scale_support.py), registered in bulk, with 10 tasks and 10 processed events per table (1M
each at 100,000 tables) and alerts on a tenth of them. Each table carries the digest and timeline stamp a
planner leaves after reading it (the steady state: every table was read once).

(1) The event path: `tms serve` and `--planners` `tms planner` processes run (default settings but an idle
planner polling the events every 0.1 s, TMS_PLANNER_POLL_SECONDS; with no manager, the periodic trigger
every 60 s over the due tables and the first scan at start over every table run too); commit events are
POSTed to `/api/v1/events:batch` at `--rate` events/s, each on a random table, for `--seconds`. Event to
plan: from the event's storing (`received_at`) to the planner's decision on it (`processed_at`: it planned
what the event made due). Meanwhile `GET /api/v1/tables` is timed, pages walked by cursor and, side by side,
the same depth by offset (a cursor page is one index probe; an offset page also counts the tables, for its
`total`). Planner memory: the processes' resident set at the end.

(2) The scan: `--changed` tables get a new instant; a planner's scan over every table (stat of the timeline
folders, a reading of the changed ones) is timed, then the leader's way (its request: a row per chunk of
table ids; a planner takes the chunks and checks their tables). Then the periodic trigger once time made
`--due` of the tables due: the leader's marking of the due tables, a planner taking and evaluating them,
and the trigger of a planner with no leader (the due tables only).

Goal: event-to-plan p99 <= 1 s. PostgreSQL: TMS_DATABASE_URL's server if set, else the local one
(tms.db.testing), in a scratch database dropped at the end."""
from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "scale")]

import httpx  # noqa: E402
from scale_support import fill_history, make_tables, register  # noqa: E402
from sqlalchemy import text, update  # noqa: E402

from manager.planning_requests import SCAN_CHUNK_TABLES  # noqa: E402
from planner.process import REQUESTS_PER_TAKE  # noqa: E402
from planner.runner import Planner  # noqa: E402
from tms.db import Database, InstanceRepo, ScanRequestRepo, TablePolicy, TableRepo  # noqa: E402
from tms.db.models import RegisteredTable  # noqa: E402
from tms.db.testing import scratch_database  # noqa: E402
from tms.hudi.storage.table_storage import LocalStorage  # noqa: E402
from tms.hudi.table.hudi_table import HudiTable  # noqa: E402
from tms.hudi.timeline.instant import Action  # noqa: E402
from tms.hudi.timeline.stamp import timeline_stamp  # noqa: E402
from tms.planning.decisions import PlannerOptions, next_tick_at  # noqa: E402
from tms.planning.digest import TimelineDigest  # noqa: E402

OPTIONS = PlannerOptions(services=frozenset({"compaction", "clean", "rollback"}), clean_commits=5)
TOKEN = "scale-bench-admin"
TIMELINE = ".hoodie/timeline"


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def seed_steady_state(db: Database, ids: list[int], paths: list[str]) -> None:
    """Every table as a planner leaves it after reading it: its digest, tick time and timeline stamp."""
    digest = TimelineDigest.of(HudiTable.load(paths[0]), None, datetime.now(UTC), OPTIONS.services)
    digest.scanned_at = time.time()
    due_at = next_tick_at(digest, TablePolicy(), OPTIONS, is_mor=True)  # an empty timeline: never by time
    state = digest.to_state()
    for at in range(0, len(ids), 5000):
        with db.transaction() as session:
            session.execute(update(RegisteredTable), [
                {"id": t, "planner_state": state, "tick_due_at": due_at,
                 "timeline_stamp": timeline_stamp(LocalStorage(p), TIMELINE)}
                for t, p in zip(ids[at:at + 5000], paths[at:at + 5000], strict=True)])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args: list[str], url: str, log: Path, **env: str) -> subprocess.Popen:
    environment = {**os.environ, "TMS_DATABASE_URL": url, "TMS_MIGRATE_ON_START": "false", "PYTHONPATH": str(REPO),
                   "TMS_ADMIN_TOKEN": TOKEN, "TMS_LOG_LEVEL": "WARNING", "TMS_PLANNER_POLL_SECONDS": "0.1", **env}
    return subprocess.Popen([sys.executable, "-m", "tms.cli", *args], cwd=REPO, env=environment,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def _wait(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.2)


def event_path(db: Database, url: str, root: Path, ids: list[int], args) -> None:
    port = _free_port()
    procs = [_start(["serve", "--port", str(port)], url, root / "service.log")]
    procs += [_start(["planner", "--threads", str(args.threads)], url, root / f"planner-{n}.log")
              for n in range(args.planners)]
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        def planners_up() -> bool:
            with db.transaction() as session:
                return sum("planner" in i.roles for i in InstanceRepo(session).list()) == args.planners

        _wait(planners_up, 180, "planners up")
        client = httpx.Client(base_url=base, headers=headers, timeout=30)
        _wait(lambda: _answers(client), 120, "service up")
        with db.transaction() as session:
            started_at = session.scalar(text("SELECT now()"))
        stop = threading.Event()
        cursor_ms: list[float] = []
        offset_ms: list[float] = []
        reader = threading.Thread(target=_read_tables, args=(base, headers, len(ids), stop, cursor_ms, offset_ms))
        reader.start()
        sent = _send_events(base, headers, ids, args.rate, args.seconds)
        stop.set()
        reader.join()
        print(f"(1) {sent:,} events sent in {args.seconds} s ({sent / args.seconds:,.0f}/s) over {len(ids):,} tables; "
              f"{args.planners} planner(s) x {args.threads} thread(s), 1 service, on {os.cpu_count()} cores")

        def drained() -> bool:
            with db.transaction() as session:
                return not session.scalar(text("SELECT count(*) FROM events WHERE processed_at IS NULL"))

        drain_started = time.monotonic()
        _wait(drained, 1800, "events processed")
        print(f"    backlog drained {time.monotonic() - drain_started:.1f} s after the last event was sent")
        rss = [_rss_mb(p.pid) for p in procs[1:]]
        with db.transaction() as session:
            lags = list(session.scalars(text(
                "SELECT extract(epoch FROM processed_at - received_at) FROM events "
                "WHERE received_at >= :t AND source = 'api'"), {"t": started_at}))
        print(f"    event to plan: p50 {_ms(lags, 0.5):,.0f} ms, p99 {_ms(lags, 0.99):,.0f} ms, max "
              f"{_ms(lags, 1.0):,.0f} ms over {len(lags):,} events (goal p99 <= 1,000 ms: "
              f"{'met' if _ms(lags, 0.99) <= 1000 else 'NOT met'})")
        print(f"    GET /api/v1/tables (limit 50) during the load: by cursor p50 {_ms(cursor_ms, 0.5):.0f} ms, "
              f"p99 {_ms(cursor_ms, 0.99):.0f} ms ({len(cursor_ms)} pages); by offset at the same depths p50 "
              f"{_ms(offset_ms, 0.5):.0f} ms, p99 {_ms(offset_ms, 0.99):.0f} ms ({len(offset_ms)}); "
              f"p99 ratio offset/cursor {_ms(offset_ms, 0.99) / _ms(cursor_ms, 0.99):.2f}")
        print(f"    planner memory (resident): {', '.join(f'{r:.0f} MB' for r in rss)}")
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def _answers(client: httpx.Client) -> bool:
    try:
        return client.get("/readyz").status_code == 200
    except httpx.HTTPError:
        return False


def _send_events(base: str, headers: dict, ids: list[int], rate: int, seconds: float, senders: int = 4) -> int:
    """`rate` events/s in all, each on a random table, as batches every 100 ms from `senders` concurrent
    clients (one client alone cannot keep the rate on a loaded machine); the number sent."""
    counts = [0] * senders

    def send(n: int) -> None:
        rng = random.Random(n)
        batch = max(1, rate // (10 * senders))
        first = datetime(2099, 1, 1, tzinfo=UTC) + timedelta(days=n)  # each sender its own instants
        with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
            start = time.monotonic()
            while time.monotonic() - start < seconds:
                events = []
                for _ in range(batch):
                    counts[n] += 1
                    instant = (first + timedelta(milliseconds=counts[n])).strftime("%Y%m%d%H%M%S%f")[:17]
                    events.append({"table_id": rng.choice(ids), "instant": instant, "action": Action.DELTA_COMMIT,
                                   "state": "completed"})
                client.post("/api/v1/events:batch", json={"events": events}).raise_for_status()
                time.sleep(max(0.0, counts[n] / (rate / senders) - (time.monotonic() - start)))

    threads = [threading.Thread(target=send, args=(n,)) for n in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts)


def _read_tables(base: str, headers: dict, tables: int, stop: threading.Event, cursor_ms: list[float],
                 offset_ms: list[float]) -> None:
    """Walk `GET /api/v1/tables` by cursor; every tenth page, the same depth by offset."""
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        cursor: dict = {}
        depth = 0
        while not stop.is_set():
            started = time.perf_counter()
            page = client.get("/api/v1/tables", params={"limit": 50, **cursor}).json()
            cursor_ms.append(time.perf_counter() - started)
            depth += len(page["items"])
            cursor = {"cursor": page["next_cursor"]} if page["next_cursor"] else {}
            if not cursor:
                depth = 0
            if len(cursor_ms) % 10 == 0:
                started = time.perf_counter()
                client.get("/api/v1/tables", params={"limit": 50, "offset": depth}).raise_for_status()
                offset_ms.append(time.perf_counter() - started)
            if len(cursor_ms) % 20 == 0:  # jump deeper: the walk covers the whole list within the run
                depth_jump = random.randrange(tables)
                cursor, depth = {}, 0
                if depth_jump:
                    started = time.perf_counter()
                    client.get("/api/v1/tables", params={"limit": 50, "offset": depth_jump}).raise_for_status()
                    offset_ms.append(time.perf_counter() - started)
            time.sleep(0.05)


def scan(db: Database, ids: list[int], paths: list[str], changed: int, due_share: float) -> None:
    rng = random.Random(11)
    touched = rng.sample(paths, changed)
    past = time.time() - 600
    for path in touched:  # a writer's new instant, a while ago (past the stamp's racy window)
        HudiTable.load(path).timeline.create_requested(Action.DELTA_COMMIT)
        os.utime(Path(path) / TIMELINE, (past, past))
    planner = Planner(db, OPTIONS, watch_timelines=False)
    started = time.perf_counter()
    reconciled = planner.scan()
    elapsed = time.perf_counter() - started
    print(f"(2) scan of {len(ids):,} tables, {changed:,} changed: {elapsed:.1f} s, {reconciled:,} timelines read "
          f"({1000 * elapsed / len(ids):.3f} ms per table)")
    for path in rng.sample(touched, changed // 2):  # half of them change again for the leader's way
        HudiTable.load(path).timeline.create_requested(Action.DELTA_COMMIT)
        os.utime(Path(path) / TIMELINE, (past + 60, past + 60))
    started = time.perf_counter()
    with db.transaction() as session:
        chunks = ScanRequestRepo(session).request(SCAN_CHUNK_TABLES)
    request = time.perf_counter() - started
    started = time.perf_counter()
    reconciled = 0
    while True:
        with db.transaction() as session:
            chunk = ScanRequestRepo(session).take()
        if not chunk:
            break
        reconciled += planner.scan_range(*chunk)
    print(f"    the leader's way: asking {chunks:,} chunks of {SCAN_CHUNK_TABLES} table ids {1000 * request:.0f} ms; "
          f"one planner taking and checking them {time.perf_counter() - started:.1f} s ({reconciled} read again)")
    periodic_trigger(db, ids, planner, due_share)
    print(f"    planner cache: {len(planner.cache):,} tables, {planner.cache.total_bytes / 2**20:.1f} MB estimated")


def periodic_trigger(db: Database, ids: list[int], planner: Planner, due_share: float) -> None:
    """Time made `due_share` of the tables due (their tick_due_at passed, the digest unchanged): the leader's
    marking, a planner taking and evaluating them, and the trigger with no leader."""
    due = random.Random(12).sample(ids, int(due_share * len(ids)))

    def make_due() -> None:
        with db.transaction() as session:
            session.execute(update(RegisteredTable).where(RegisteredTable.id.in_(due))
                            .values(tick_due_at=text("now() - interval '1 minute'")))

    make_due()
    started = time.perf_counter()
    with db.transaction() as session:
        marked = TableRepo(session).request_ticks()
    mark = time.perf_counter() - started
    started = time.perf_counter()
    planned = 0
    while True:
        with db.transaction() as session:
            taken = TableRepo(session).take_tick_requests(REQUESTS_PER_TAKE)
        if not taken:
            break
        planned += planner.tick_tables(taken)
    print(f"    periodic trigger, {len(due):,} tables due: the leader marking {marked:,} tables {1000 * mark:.0f} ms; "
          f"one planner taking and evaluating them {time.perf_counter() - started:.1f} s ({planned} task(s))")
    make_due()
    started = time.perf_counter()
    planned = planner.tick()
    print(f"    periodic trigger with no leader (one planner, the due tables only): "
          f"{time.perf_counter() - started:.1f} s, {planned} task(s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=100_000)
    ap.add_argument("--rate", type=int, default=1000, help="commit events per second")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--planners", type=int, default=2)
    ap.add_argument("--threads", type=int, default=4, help="threads per planner")
    ap.add_argument("--changed", type=int, default=1000, help="tables changed before the scan")
    ap.add_argument("--due", type=float, default=0.01, help="share of the tables time made due for the trigger")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tms-scale-") as tmp, scratch_database() as url:
        root = Path(tmp)
        db = Database(url, pool_size=10)
        try:
            started = time.perf_counter()
            paths, facts = make_tables(root / "tables", args.tables)
            ids = register(db, paths, facts)
            fill_history(db, tasks_per_table=10, events_per_table=10)
            seed_steady_state(db, ids, paths)
            print(f"farm: {len(ids):,} tables, {10 * len(ids):,} tasks and events, in "
                  f"{time.perf_counter() - started:.0f} s")
            event_path(db, url, root, ids, args)
            scan(db, ids, paths, args.changed, args.due)
        finally:
            db.dispose()


if __name__ == "__main__":
    main()
