"""The long-life benchmark's writer: a MERGE_ON_READ table (version 8) receiving delta commits as fast as a busy
Hudi writer does, each an upsert of existing trips over many partitions, with Hudi's commit callback to TMS.

It writes through TMS's format library as HudiWriter does (the instant's requested and inflight files under
the table's lock, markers, a heartbeat, one Avro log block per file group touched, the commit metadata, the
metadata table's commit when the table has one, the completed instant, then the callback); what it leaves out
is HudiWriter's per-write work that grows with the table and says nothing about TMS: finding each key's file
group by reading every slice of its partition (this writer wrote the keys, one file group per partition, so it
knows where they are, as Hudi's record index does), and reading the schema back from the latest commits (it
wrote the schema). The table stays a Hudi table every reader reads: the rows are the last value written to
each key.

    .venv/bin/python bench/long_life_writer.py --commits 200        # prints the commits per second it reached
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402

from tms.hudi.errors import HudiError, TableNotFoundError  # noqa: E402
from tms.hudi.fs_view.view import FileSlice, FileSystemView  # noqa: E402
from tms.hudi.records.schema import arrow_to_avro, with_meta_fields  # noqa: E402
from tms.hudi.table.hudi_table import HudiTable  # noqa: E402
from tms.hudi.table.writer import HudiWriter, WriteResult  # noqa: E402
from tms.hudi.timeline.instant import Action  # noqa: E402
from tms.hudi.timeline.serde import CommitMetadata, WriteStat, serialize_commit_metadata  # noqa: E402

SCHEMA = pa.schema([("trip", pa.string()), ("ts", pa.int64()), ("rider", pa.string()), ("fare", pa.float64()),
                    ("region", pa.string())])
KEY, ORDERING, PARTITION = "trip", "ts", "region"
KEYS_PER_PARTITION = 200


def region(n: int) -> str:
    return f"r{n:03d}"


class LongLifeWriter:
    """Delta commits of `batch` upserts spread over `partitions` partitions of `keys_per_partition` trips each
    (every commit touches `partitions_per_commit` of them, chosen at random)."""

    def __init__(self, base_path: str, *, name: str = "long_life", partitions: int = 20,
                 keys_per_partition: int = KEYS_PER_PARTITION, partitions_per_commit: int = 8, batch: int = 200,
                 callback_url: str | None = None, callback_key: str | None = None, seed: int = 0):
        self.partitions, self.keys_per_partition = partitions, keys_per_partition
        self.partitions_per_commit, self.batch = min(partitions_per_commit, partitions), batch
        self.rng = random.Random(seed)
        try:
            table = HudiTable.load(base_path)
        except TableNotFoundError:
            table = HudiWriter.create_table(base_path, table_type="MERGE_ON_READ", version=8, key=[KEY],
                                            ordering=[ORDERING], partition=[PARTITION], schema=SCHEMA,
                                            name=name).table
        self.writer = HudiWriter(table, callback_url=callback_url, callback_key=callback_key)
        self.table = table
        self.avro_schema = arrow_to_avro(SCHEMA, table.config.name)
        self.full_schema = with_meta_fields(self.avro_schema)
        self.file_groups = self._seed()

    def _keys(self, p: int) -> list[str]:
        return [f"{region(p)}-{i:05d}" for i in range(self.keys_per_partition)]

    def _seed(self) -> dict[str, str]:
        """Each partition's file group (partition path -> file id); the first commit inserts every trip, through
        HudiWriter's own write (it finds no key, so one new file group per partition)."""
        view = self.table.file_system_view()
        groups = {fs.partition: fs.file_id for fs in view.merged_latest_slices()}
        if groups:
            return groups
        now = int(time.time() * 1000)
        rows = [self._trip(key, region(p), now) for p in range(self.partitions) for key in self._keys(p)]
        result = self.writer.write(pa.Table.from_pylist(rows, SCHEMA), "insert")
        return {str(s.partition_path): str(s.file_id) for s in result.stats}

    def _trip(self, key: str, part: str, ts: int) -> dict:
        return {KEY: key, ORDERING: ts, "rider": f"rider-{self.rng.randint(1, 999)}",
                "fare": round(self.rng.uniform(5, 90), 2), PARTITION: part}

    def commit(self) -> WriteResult:
        """One delta commit: `batch` upserts over `partitions_per_commit` partitions."""
        w, tl = self.writer, self.table.timeline
        tl.reload()
        chosen = sorted(self.rng.sample(range(self.partitions), self.partitions_per_commit))
        with w.transactions.transaction():  # the instant time is generated under the table's lock
            instant = tl.create_requested(Action.DELTA_COMMIT)
            pending_at_start = [i.timestamp for i in tl.pending() if i.timestamp != instant.timestamp]
        ts = instant.timestamp
        w._heartbeat(ts)
        extra = {"schema": json.dumps(self.avro_schema)}
        inflight = tl.transition_to_inflight(instant, serialize_commit_metadata(
            CommitMetadata(operation_type="UPSERT", extra_metadata=extra), self.table.config.version))
        slices = self._latest_slices([f"{PARTITION}={region(p)}" for p in chosen])
        now = int(time.time() * 1000)
        per = max(1, self.batch // len(chosen))
        stats: list[WriteStat] = []
        for task, p in enumerate(chosen):
            part = f"{PARTITION}={region(p)}"
            keys = self.rng.sample(self._keys(p), min(per, self.keys_per_partition))
            rows = pa.Table.from_pylist([self._trip(k, region(p), now) for k in keys], SCHEMA)
            stats.append(w._append_log(ts, slices[part], rows, "upsert", ORDERING, self.full_schema, task))
        groups = {str(s.partition_path): [s] for s in stats}  # one file group per partition
        meta = CommitMetadata(partition_to_write_stats=groups, compacted=False, extra_metadata=extra,
                              operation_type="UPSERT")
        self.table.storage.write_atomic(tl.path_of(inflight),
                                        serialize_commit_metadata(meta, self.table.config.version), overwrite=True)
        w._finish(inflight, meta, pending_at_start)
        return WriteResult(ts, Action.DELTA_COMMIT, True, stats)

    def _latest_slices(self, partitions: list[str], attempts: int = 3) -> dict[str, FileSlice]:
        """The latest file slice of each of `partitions` (those the commit writes: a writer lists only them, as
        Hudi's does), as HudiWriter takes it (after a compaction TMS planned: the slice that compaction starts,
        which the log blocks go to). A file group the view does not show (a compaction completed after the
        timeline was loaded and a clean deleted the slice before it: a slow reader's race) is looked for again on
        a reloaded timeline; still missing, the commit fails (HudiError)."""
        for attempt in range(attempts):
            view = FileSystemView(self.table, partitions=partitions)
            slices = {}
            for partition in partitions:
                file_id = self.file_groups[partition]
                group = next((g for g in view.file_groups(partition) if g.file_id == file_id), None)
                if group is None or group.latest_slice is None:
                    break
                slices[partition] = group.latest_slice
            else:
                return slices
            if attempt + 1 < attempts:
                self.table.timeline.reload()
        raise HudiError(f"file group {file_id} of {partition} is not in the table's view")


def run(writer: LongLifeWriter, *, commits: int = 0, seconds: float = 0, interval: float = 0,
        stop: Callable[[], bool] = lambda: False, echo: Callable[[str], None] = print) -> tuple[int, int]:
    """Commit until `commits` are written or `seconds` have passed (0: no such bound) or `stop()`, at most one
    commit per `interval` seconds; (the commits written, the commits that failed). A failed commit is told and
    left as it is (inflight: TMS rolls it back once its heartbeat expires), as a writer's retry would."""
    started, n, failed = time.monotonic(), 0, 0
    while (not commits or n < commits) and (not seconds or time.monotonic() - started < seconds) and not stop():
        began = time.monotonic()
        try:
            writer.commit()
            n += 1
        except HudiError as e:
            failed += 1
            echo(f"a delta commit failed: {e}")
        if interval:
            time.sleep(max(0.0, interval - (time.monotonic() - began)))
    return n, failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--path", help="the table's base path, a folder or s3://bucket/key (default: a fresh folder)")
    ap.add_argument("--name", default="long_life", help="the table's name")
    ap.add_argument("--commits", type=int, default=100, help="delta commits to write (0: no bound)")
    ap.add_argument("--seconds", type=float, default=0, help="stop after this long (0: no bound)")
    ap.add_argument("--interval", type=float, default=0, help="at most one commit per this many seconds (0: "
                                                               "full speed)")
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--partitions-per-commit", type=int, default=8)
    ap.add_argument("--batch", type=int, default=200, help="upserts per commit")
    ap.add_argument("--callback-url", help="Hudi's commit callback URL (TMS: .../api/v1/hudi/callback)")
    ap.add_argument("--callback-key", default=os.environ.get("TMS_CALLBACK_KEY"))
    args = ap.parse_args()
    stopping = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):  # the commit under way completes first
        signal.signal(signum, lambda *_: stopping.set())
    path = args.path or str(Path(tempfile.mkdtemp(prefix="tms-long-life-writer-")) / args.name)
    writer = LongLifeWriter(path, name=args.name, partitions=args.partitions,
                            partitions_per_commit=args.partitions_per_commit, batch=args.batch,
                            callback_url=args.callback_url, callback_key=args.callback_key)
    print(f"{path}: {args.partitions} partitions of {writer.keys_per_partition} trips", flush=True)
    started = time.monotonic()
    n, failed = run(writer, commits=args.commits, seconds=args.seconds, interval=args.interval,
                    stop=stopping.is_set, echo=lambda text: print(text, flush=True))
    seconds = time.monotonic() - started
    print(f"{n} delta commits in {seconds:.1f} s: {n / seconds:.2f} commits/s ({failed} failed)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
