"""Object-store benchmark: the requests (LIST, GET, HEAD, PUT) and the time the planner spends on one commit
event of a MERGE_ON_READ v8 table whose timeline holds 100 and 10,000 completed instants, on S3 (the moto
server on loopback) and, side by side, on a local disk.

    python bench/object_store.py [--events 20] [--instants 100,10000] [--file-groups 8,32]

The timelines are seeded as in bench/plan.py (four delta commits then a compaction, over and over, and a
completed clean retaining the last 10 commits after every tenth; instant files only, no data files), straight
into the S3 endpoint's memory (no requests) or onto the disk, one instant a minute up to now (the planner
lists only the timeline's tail, the instants of its last hour, see tms/hudi/timeline/tail_listing.py; instants
seeded milliseconds apart would all be in it). After the planner first sees a table, each event is a new delta
commit's instant files and its callback event; the planner's `handle_events` on it is timed and its requests
counted. With Hudi's default trigger every fifth event runs a planning pass (the timeline reloaded, the file-
system view built); the others are decided from the table's digest. Requests on S3 are the HTTP requests the
endpoint received during `handle_events`, classified as S3 bills them (a GET with `list-type` or `prefix` on
the bucket is a LIST); on the local disk, the same operations of the table's Storage (names/listdir as LIST,
read_bytes/open as GET, exists/info as HEAD, writes as PUT). The local planner lists the folder on every pass
(no change feed), as on object stores. Times on S3 are the moto server's (in this process, one request at a
time), not a real store's: compare the requests.

The planning passes are reported apart by how the planner read the timeline: its tail only (S3's
`start-after`), or exactly (a pass that plans a clean, a rollback or a savepoint: those decide on savepoints,
named by the commit they keep, which a tail listing cannot see; listed from the latest clean's earliest
commit to retain, the oldest commit Hudi lets a savepoint keep), and all together.

Then the requests of one compaction of every file group of a table (MOR v8, the metadata table on; one file
group per partition, two delta commits of updates each) run by the python runner, per compacted file group,
on S3 and on the local disk, for two table sizes (`--file-groups`).

Goal (issue 22): requests per planning pass, 10,000 / 100 instants <= 1.1. PostgreSQL: a throwaway scratch
database (tms.db.testing)."""
from __future__ import annotations

import argparse
import logging
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from giant_s3 import request_kind  # noqa: E402

from tms.hudi.timeline.instant import Action  # noqa: E402

BUCKET = "tms-bench"
KINDS = ("LIST", "GET", "HEAD", "PUT", "other")
TAIL_PASS, WHOLE_PASS, ANY_PASS = "pass, tail listed", "pass, listed exactly", "planning pass (all)"
# Whether each planning pass since the last event listed the timeline exactly (see _record_listing_kind)
LISTED_WHOLE: list[bool] = []
S3_ENV = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1",
          "AWS_DEFAULT_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true", "AWS_EC2_METADATA_DISABLED": "true"}


class RequestCount:
    """Requests counted while `counting` (thread-safe)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.counting = False
        self._lock = threading.Lock()

    def add(self, kind: str) -> None:
        if self.counting:
            with self._lock:
                self.counts[kind] += 1

    @contextmanager
    def window(self) -> Iterator[Counter[str]]:
        """Counts of the requests made inside the `with` block."""
        self.counts = Counter()
        self.counting = True
        try:
            yield self.counts
        finally:
            self.counting = False


def start_moto(count: RequestCount) -> str:
    """moto's S3 app in a thread of this process (its state can be seeded without requests), each request
    counted and handled one at a time; the endpoint's URL."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    app = DomainDispatcherApplication(create_backend_app)
    one_at_a_time = threading.Lock()

    def counted(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        count.add(request_kind(environ, KINDS))
        with one_at_a_time:
            return list(app(environ, start_response))

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = make_server("127.0.0.1", port, counted, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{port}"


def _moto_put(key: str, data: bytes) -> None:
    """An object put straight into the moto server's memory (no request)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends
    s3_backends[DEFAULT_ACCOUNT_ID]["global"].put_object(BUCKET, key, data)


def count_storage_calls(storage: Any, count: RequestCount) -> None:
    """Count the Storage operations of local tables (`storage`: the LocalStorage class) as the requests they
    would be on an object store."""
    kinds = {"names": "LIST", "listdir": "LIST", "read_bytes": "GET", "open": "GET", "exists": "HEAD",
             "info": "HEAD", "write_atomic": "PUT", "write_new": "PUT", "open_new": "PUT", "append": "PUT"}
    for method, kind in kinds.items():
        original = getattr(storage, method)

        def counted(*args: Any, _original: Any = original, _kind: str = kind, **kwargs: Any) -> Any:
            count.add(_kind)
            return _original(*args, **kwargs)

        setattr(storage, method, counted)


class Run:
    """One table (`instants` completed instants seeded), registered, first seen by its own planner."""

    def __init__(self, db: Any, base_path: str, instants: int, put: Callable[[str, bytes], None],
                 count: RequestCount, local: bool):
        import pyarrow as pa

        from planner.runner import Planner
        from service.table_view import registration_facts
        from tms.db import TableRepo
        from tms.hudi.table.hudi_table import HudiTable
        from tms.hudi.table.writer import HudiWriter
        from tms.hudi.timeline.instant import new_instant_time
        from tms.hudi.timeline.serde import CommitMetadata, serialize_commit_metadata
        from tms.planning.decisions import PlannerOptions
        schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("ts", pa.int64()), ("city", pa.string())])
        HudiWriter.create_table(base_path, table_type="MERGE_ON_READ", version=8, key=["id"], ordering=["ts"],
                                partition=["city"], schema=schema)
        self.table = HudiTable.load(base_path)
        self.db, self.put, self.count, self.instants = db, put, count, instants
        self.label = f"{'local' if local else 'S3'} {instants:,}"
        self.timeline_key = self.table.config.timeline_dir
        self.zone = self.table.config.timeline_zone
        self.clock = datetime.now(UTC) - timedelta(minutes=instants + 1)
        self.step = timedelta(seconds=30)  # one instant a minute (requested, completed 30 s later)
        self.meta = serialize_commit_metadata(CommitMetadata(partition_to_write_stats={}, operation_type="UPSERT"),
                                              8)
        self._new_time = new_instant_time
        writes: list[str] = []
        for n in range(instants):
            compaction = (n + 1) % 5 == 0 or n == instants - 1
            writes.append(self.instant(Action.COMPACTION if compaction else Action.DELTA_COMMIT,
                                       Action.COMMIT if compaction else Action.DELTA_COMMIT))
            if (n + 1) % 10 == 0 and n + 1 < instants:  # the cleans of a serviced table: 10 commits retained
                self.clean(writes[-10])
        self.step = timedelta(milliseconds=2)
        with db.transaction() as session:
            self.table_id = TableRepo(session).register(base_path=base_path, **registration_facts(self.table)).id
        self.planner = Planner(db, PlannerOptions(services=frozenset({"compaction", "clean", "rollback"}),
                                                  clean_commits=5), watch_timelines=False)
        self.results: dict[str, list[tuple[Counter[str], float]]] = {
            "first sight": [], "decided from the digest": [], TAIL_PASS: [], WHOLE_PASS: [], ANY_PASS: []}
        self.event(Action.DELTA_COMMIT, "first sight")

    def _tick(self) -> str:
        self.clock += self.step
        return str(self._new_time(self.zone, self.clock))

    def instant(self, pending: str, completed: str) -> str:
        from tms.hudi.timeline.instant import Instant, State, instant_file_name
        ts, done = self._tick(), self._tick()
        for inst, content in ((Instant(ts, State.REQUESTED, pending), b""),
                              (Instant(ts, State.INFLIGHT, pending), b""),
                              (Instant(ts, State.COMPLETED, completed, done), self.meta)):
            self.put(f"{self.timeline_key}/{instant_file_name(inst, 8)}", content)
        return ts

    def clean(self, retain: str) -> None:
        """A completed clean that retained the commits from `retain` (Hudi's default policy's bound on the
        commits a savepoint may keep)."""
        from tms.hudi.timeline.instant import Instant, State, instant_file_name
        from tms.hudi.timeline.serde import (
            ActionInstant,
            CleanerPlan,
            CleanMetadata,
            serialize_clean_metadata,
            serialize_cleaner_plan,
        )
        ts, done = self._tick(), self._tick()
        plan = serialize_cleaner_plan(CleanerPlan(
            earliest_instant_to_retain=ActionInstant(timestamp=retain, action="deltacommit", state="COMPLETED"),
            policy="KEEP_LATEST_COMMITS"))
        meta = serialize_clean_metadata(CleanMetadata(start_clean_time=ts, time_taken_in_millis=1,
                                                      total_files_deleted=0, earliest_commit_to_retain=retain))
        for inst, content in ((Instant(ts, State.REQUESTED, Action.CLEAN), plan),
                              (Instant(ts, State.INFLIGHT, Action.CLEAN), plan),
                              (Instant(ts, State.COMPLETED, Action.CLEAN, done), meta)):
            self.put(f"{self.timeline_key}/{instant_file_name(inst, 8)}", content)

    def event(self, action: str = Action.DELTA_COMMIT, kind: str | None = None) -> None:
        from tms.db import EventRepo, NewEvent, TableRepo
        ts = self.instant(action, action)
        with self.db.transaction() as session:
            EventRepo(session).add_many([NewEvent(self.table_id, ts, action, "completed", "hudi_callback")])
            before = TableRepo(session).get(self.table_id).planned_at
        LISTED_WHOLE.clear()
        with self.count.window() as counts:
            started = time.perf_counter()
            self.planner.handle_events(self.table_id)
            elapsed = time.perf_counter() - started
        with self.db.transaction() as session:
            planned = TableRepo(session).get(self.table_id).planned_at != before
        result = (Counter(counts), elapsed)
        if kind is None and planned:
            self.results[ANY_PASS].append(result)
            kind = WHOLE_PASS if any(LISTED_WHOLE) else TAIL_PASS
        self.results[kind or "decided from the digest"].append(result)


def report(runs: list[Run]) -> None:
    print("requests and time per commit event (MOR v8, Hudi's default policy; medians over the events):")
    print(f"  {'table, instants':18} {'event':24} {'n':>3} " + " ".join(f"{k:>6}" for k in KINDS[:4])
          + f" {'total':>6} {'ms':>8}")
    medians: dict[tuple[str, str], float] = {}
    times: dict[tuple[str, str], float] = {}
    for kind in (TAIL_PASS, WHOLE_PASS, ANY_PASS, "decided from the digest", "first sight"):
        for run in runs:
            results = run.results[kind]
            if not results:
                continue
            per_kind = [statistics.median(c[k] for c, _ in results) for k in KINDS[:4]]
            total = statistics.median(sum(c.values()) for c, _ in results)
            ms = 1000 * statistics.median(t for _, t in results)
            medians[(run.label, kind)] = total
            times[(run.label, kind)] = ms
            print(f"  {run.label:18} {kind:24} {len(results):>3} " + " ".join(f"{v:>6g}" for v in per_kind)
                  + f" {total:>6g} {ms:>8.1f}")
    for store in ("S3", "local"):
        labels = sorted({r.label for r in runs if r.label.startswith(store + " ")}, key=lambda s: int(
            s.split()[1].replace(",", "")))
        for kind in (TAIL_PASS, WHOLE_PASS, ANY_PASS):
            if len(labels) == 2 and (labels[0], kind) in medians and (labels[1], kind) in medians:
                a, b = medians[(labels[0], kind)], medians[(labels[1], kind)]
                ta, tb = times[(labels[0], kind)], times[(labels[1], kind)]
                print(f"  {store} {kind:20}: {labels[1]} / {labels[0]}: requests {b / a:.2f} (goal <= 1.1), "
                      f"time {tb / ta:.2f}")


def compaction_requests(base_path: str, partitions: int, count: RequestCount) -> tuple[Counter[str], int, float]:
    """A MOR v8 table (the metadata table on, as Hudi's default) of `partitions` partitions, one file group each,
    with two delta commits of updates on its inserts; one compaction of every file group planned, then run by
    the python runner: the requests of the run, its file groups and its seconds."""
    import pyarrow as pa

    from tms.execute.dispatch import execute_instant
    from tms.execute.runner import LocalRunner
    from tms.hudi.table.hudi_table import HudiTable
    from tms.hudi.table.writer import HudiWriter
    from tms.planning.compaction import plan_compaction
    from tms.planning.policy import TablePolicy
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("ts", pa.int64()), ("city", pa.string())])
    writer = HudiWriter.create_table(base_path, table_type="MERGE_ON_READ", version=8, key=["id"], ordering=["ts"],
                                     partition=["city"], schema=schema)
    rows = 200 * partitions
    for ts in range(3):  # the inserts, then two updates of every row
        writer.write(pa.table({"id": list(range(rows)), "name": [f"n{ts}"] * rows, "ts": [ts] * rows,
                               "city": [f"c{i % partitions:03d}" for i in range(rows)]}, schema=schema))
    table = HudiTable.load(base_path)
    planned = plan_compaction(table, TablePolicy(), datetime.now(UTC), force=True)
    assert planned is not None, "nothing to compact"
    table = HudiTable.load(base_path)
    with count.window() as counts:
        started = time.perf_counter()
        result = execute_instant(table, planned.instant, LocalRunner())
        elapsed = time.perf_counter() - started
    return Counter(counts), result.tasks, elapsed


def report_compactions(results: list[tuple[str, int, Counter[str], int, float]]) -> None:
    print("requests per compacted file group (one compaction of every file group, python runner):")
    print(f"  {'store':6} {'groups':>6} " + " ".join(f"{k:>6}" for k in KINDS[:4])
          + f" {'total':>6} {'per group':>10} {'s':>7}")
    for store, groups, counts, compacted, elapsed in results:
        assert compacted == groups, f"{compacted} of {groups} file groups compacted"
        total = sum(counts.values())
        print(f"  {store:6} {groups:>6} " + " ".join(f"{counts[k]:>6}" for k in KINDS[:4])
              + f" {total:>6} {total / groups:>10.1f} {elapsed:>7.1f}")
    for store in ("S3", "local"):
        mine = sorted((g, sum(c.values()) / g) for s, g, c, _, _ in results if s == store)
        if len(mine) == 2:
            print(f"  {store}: requests per file group, {mine[1][0]} / {mine[0][0]} groups: "
                  f"{mine[1][1] / mine[0][1]:.2f}")


def _record_listing_kind() -> None:
    """Note in LISTED_WHOLE whether each planning pass lists the timeline exactly (the planner's own answer)."""
    from tms.plan_pass import passes
    decides = passes._decides_on_older_instants

    def recorded(ctx: Any, work: Any) -> bool:
        LISTED_WHOLE.append(decides(ctx, work))
        return LISTED_WHOLE[-1]

    passes._decides_on_older_instants = recorded


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=20, help="timed events per table (every fifth plans)")
    ap.add_argument("--instants", default="100,10000", help="completed instants of each table, comma-separated")
    ap.add_argument("--file-groups", default="8,32",
                    help="file groups of the compacted tables, comma-separated (empty: no compaction)")
    args = ap.parse_args()
    sizes = [int(n) for n in args.instants.split(",")]

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    _record_listing_kind()
    count = RequestCount()
    from tms.hudi.storage.table_storage import LocalStorage
    count_storage_calls(LocalStorage, count)
    url = start_moto(count)
    os.environ.update({**S3_ENV, "AWS_ENDPOINT_URL": url})
    import boto3
    boto3.client("s3", endpoint_url=url).create_bucket(Bucket=BUCKET)

    from tms.db import Database
    from tms.db.testing import scratch_database

    with tempfile.TemporaryDirectory(prefix="tms-bench-os-") as tmp, scratch_database() as db_url:
        db = Database(db_url)
        try:
            runs = []
            for n in sizes:
                def put_s3(key: str, data: bytes, _n: int = n) -> None:
                    _moto_put(f"t{_n}/{key}", data)

                def put_local(key: str, data: bytes, _n: int = n) -> None:
                    (Path(tmp) / f"t{_n}" / key).write_bytes(data)

                runs.append(Run(db, f"s3://{BUCKET}/t{n}", n, put_s3, count, local=False))
                runs.append(Run(db, str(Path(tmp) / f"t{n}"), n, put_local, count, local=True))
            for _ in range(args.events):
                for run in runs:
                    run.event()
            for run in runs:
                run.planner.close()
            report(runs)
            compactions = []
            for groups in [int(n) for n in args.file_groups.split(",") if n]:
                for store, base in (("S3", f"s3://{BUCKET}/c{groups}"), ("local", str(Path(tmp) / f"c{groups}"))):
                    compactions.append((store, groups, *compaction_requests(base, groups, count)))
            if compactions:
                report_compactions(compactions)
        finally:
            db.dispose()


if __name__ == "__main__":
    main()
