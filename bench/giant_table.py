"""A giant MERGE_ON_READ table (issue 37, its benchmark and item 5): `--partitions` partitions (default 100,000),
`--file-groups` file groups (default 1,000,000) spread evenly over them, a timeline of `--instants` instants
(default 10,000) and a metadata table with its files partition; `--scale 0.01` divides all three (a run that
fits a small machine). Prints, each figure from a process of its own (the same command, `--measure`): its
planning time (imports and the table's loading excluded), its peak resident memory (VmHWM, imports
included) and its storage requests (bench/storage_requests.py: LocalStorage's listings, reads, existence and
size checks):

- the first compaction plan, a full pass over every file group (all have log files);
- then, that plan completed and one delta commit touching `--touched` partitions (default 10), the next plan as
  a full pass and incrementally (TMS_PLANNER_FULL_PASS_HOURS's default; the issue's goals: incremental <= 1 s and
  <= 0.05x the full pass, peak <= 1 GB);
- a clean plan over the files the compaction expired (KEEP_LATEST_COMMITS, one commit retained: every file group's
  first slice, a base file and its log files), bounded by tms.clean.max.files.per.plan (its default, 100,000):
  its files per plan;
- the whole clean, that plan made and run by TMS's clean executor (tms.execute.clean: a task per partition, its
  files deleted in batches of 1,000, the clean's metadata-table commit and its instant), against deleting the
  same files alone (an unlink each, nothing else: no confinement check, no record), each on a fresh copy of the table
  (`cp --sparse=always`); the issue's goal: the whole clean within 2x the deletes alone;
- with `--s3`, each of these on the S3 test endpoint (bench/giant_s3.py: moto, requests served one at a time and
  counted by the endpoint, the table seeded there from the local build without a request per file), where
  deleting the files alone is a DeleteObject each, and also (printed beside) a DeleteObjects per 1,000 keys,
  the requests TMS's clean makes;
- the live view `GET /api/v1/tables/{id}` answers with (service/table_view.live_view) and the table page's
  storage part (the live view and service/ui/table_facts.read_table_facts over one loading of the table), the
  database's part left out (a few indexed rows, the same for any table); goal <= 1 s.

How the table is made, as fast as possible: the table and its metadata table are created by TMS's writer
(HudiWriter.create_table, tms.hudi.metadata.init.create_metadata_table); each instant's commit metadata is
serialised by tms.hudi.timeline.serde and its three instant files written straight into the timeline folder
(the timeline's own writer reloads the timeline at each step: quadratic in instants); the data files are
empty placeholders with sizes (sparse files: a 1 MiB base file, a 4 KiB log file), which is all planning and
the live view read of them (names and sizes from the listing, record counts from the commit metadata). The
first instant inserts every file group's base file, the others are delta commits each writing a log file to
every file group of the next few partitions, round the table. The metadata table gets one delta commit, at
the last instant, listing every file the timeline wrote (tms.hudi.metadata.writer: the files partition as a
commit per instant would leave it); the completed compaction and the touching delta commit get theirs as the
executors write them.

    .venv/bin/python bench/giant_table.py --scale 0.01 [--dir PATH]      # 1,000 partitions, 10,000 file groups
    .venv/bin/python bench/giant_table.py --scale 0.1                    # 10,000 partitions, 100,000 file groups
    .venv/bin/python bench/giant_table.py                                # the issue's size
    .venv/bin/python bench/giant_table.py --scale 0.1 --view-only        # the live view and page alone
    .venv/bin/python bench/giant_table.py --scale 0.1 --s3               # a tenth of the size on S3

Figures (2026-11-29, 2 cores loaded by a CI run, load average 7-14; docs/benchmarks.md keeps them), `--scale 0.01`
(1,000 partitions, 10,000 file groups, 100 instants; built in 20.6 s, the whole run about 8 minutes):

    GET /api/v1/tables/{id} (storage)      0.27 s  peak     173 MB       200 requests  10000 file groups
    table page (storage)                   0.18 s  peak     173 MB       200 requests
    first compaction plan (full pass)     12.69 s  peak     225 MB      1104 requests  10000 operations
    next compaction plan, full pass       17.28 s  peak     218 MB      1108 requests  100 operations
    next compaction plan, incremental      0.48 s  peak     179 MB        17 requests  100 operations
    clean plan                            28.00 s  peak     219 MB      2109 requests  20880 files in 1000 partitions
    whole clean (plan + execute)          42.31 s  peak     218 MB      2135 requests  20880 files (plan 24.59 s)
    deleting the same files alone          8.01 s  peak     175 MB         0 requests  20880 files
    RATIOS incremental / full pass: 0.028 in time (goal <= 0.05), 0.0153 in requests; incremental 0.48 s (goal
    <= 1 s); peak of any plan 225 MB (goal <= 1024); API 0.27 s, page 0.18 s (goal <= 1 s); whole clean /
    deleting its files alone 5.3 (goal <= 2)

Session 19 (quieter): plans 8.80, 7.21 and 0.45 s (0.063: the incremental plan parsed the last plan's 10,000
operations for its extraMetadata), clean plan 10.03 s; at load average 7-9: plans 40.6, 40.0 and 3.34 s, clean 49.8 s.
Before the live view read a sample (the whole table, three times on the page): 38.7 s and 54.3 s on that table.
`--partitions 100000 --file-groups 100000 --instants 1000 --view-only` (built in 464 s): the live view 0.40 s, the
page 0.45 s, 200 storage requests, 178 MB peak; 100,000 file groups estimated (exact) from 99 partitions read.
Session 25, the full size (quiet machine, built in 197 s): the first compaction plan 120.4 s, peak 896 MB, 205,455
requests, 256,000 operations (the 500 GB target IO bounds it); the next full pass 139.4 s, 896 MB; incremental
58.1 s, 801 MB (the first plan left 744,000 file groups out, in nearly every partition: the next plan looks at
them). At 1/10 after the session's changes: full pass 12.75 s, 289 MB; clean plan 10.58 s, 295 MB.
Session 26, `--scale 0.01 --s3` (quiet machine; moto serves a request in about 22-35 ms, one at a time): live view
4.49 s and page 4.70 s (201 requests), first plan 31.45 s (1,107 requests), full pass 39.11 s, incremental 0.66 s
(19 requests), clean plan 36.70 s; whole clean 59.01 s (plan 56.00 s) against a DeleteObject a file 70.20 s (0.84)
and DeleteObjects of 1,000 keys 1.51 s.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from clean_plan import SCHEMA  # noqa: E402
from giant_s3 import BUCKET, GiantS3  # noqa: E402
from giant_s3 import requests as s3_requests  # noqa: E402
from incremental_plan import FULL_PASS_EVERY  # noqa: E402
from storage_requests import REQUESTS, count_requests  # noqa: E402

from tms.execute.dispatch import execute_instant  # noqa: E402
from tms.execute.fencing import no_fence  # noqa: E402
from tms.execute.parts import cut_into_parts  # noqa: E402
from tms.execute.runner import LocalRunner  # noqa: E402
from tms.hudi.fs_view.file_names import BaseFileName, LogFileName  # noqa: E402
from tms.hudi.metadata.init import create_metadata_table  # noqa: E402
from tms.hudi.metadata.writer import write_metadata_commit  # noqa: E402
from tms.hudi.table.hudi_table import HudiTable  # noqa: E402
from tms.hudi.table.writer import HudiWriter  # noqa: E402
from tms.hudi.timeline.instant import Action, Instant, State, instant_file_name, new_instant_time  # noqa: E402
from tms.hudi.timeline.serde import (  # noqa: E402
    CommitMetadata,
    WriteStat,
    parse_clean_metadata,
    parse_cleaner_plan,
    parse_compaction_plan,
    serialize_commit_metadata,
)
from tms.planning.clean import plan_clean_or_why  # noqa: E402
from tms.planning.compaction import plan_compaction  # noqa: E402
from tms.planning.planned import Planned  # noqa: E402
from tms.planning.policy import TablePolicy  # noqa: E402

VERSION = 8
BASE_BYTES, LOG_BYTES = 1 << 20, 4 << 10
CLEAN_POLICY = {"hoodie.cleaner.commits.retained": 1}
TOKEN = "0-0-0"


def _placeholder(path: str, size: int) -> None:
    with open(path, "wb") as f:
        f.truncate(size)  # sparse: the size a listing reports, no bytes on disk


class GiantTable:
    """Writes the table's instants and placeholder files straight into its folders."""

    def __init__(self, base: Path, partitions: int, file_groups: int):
        HudiWriter.create_table(str(base), table_type="MERGE_ON_READ", version=VERSION, key=["id"],
                                ordering=["ts"], partition=["city"], schema=SCHEMA)
        create_metadata_table(HudiTable.load(str(base)), ["files"])
        self.base = base
        self.table = HudiTable.load(str(base))
        self.timeline_dir = base / self.table.config.timeline_dir
        self.partitions = [f"city=p{n:06d}" for n in range(partitions)]
        per = max(1, file_groups // partitions)
        self.groups = {p: [f"{n:08x}-{g:04x}-4000-8000-000000000000-0" for g in range(per)]
                       for n, p in enumerate(self.partitions)}
        self.clock = datetime.now(UTC) - timedelta(days=1)
        for p in self.partitions:
            (base / p).mkdir()
            (base / p / ".hoodie_partition_metadata").write_text("commitTime=0\npartitionDepth=1\n")

    def _tick(self) -> str:
        self.clock += timedelta(milliseconds=3)
        return new_instant_time(self.table.config.timeline_zone, self.clock)

    def _complete(self, ts: str, action: str, stats: dict[str, list[WriteStat]], operation: str,
                  pending_action: str | None = None) -> CommitMetadata:
        meta = CommitMetadata(partition_to_write_stats=stats, operation_type=operation)
        pending = pending_action or action
        for inst, content in ((Instant(ts, State.REQUESTED, pending), b""), (Instant(ts, State.INFLIGHT, pending), b""),
                              (Instant(ts, State.COMPLETED, action, self._tick()),
                               serialize_commit_metadata(meta, VERSION))):
            (self.timeline_dir / instant_file_name(inst, VERSION)).write_bytes(content)
        return meta

    def insert(self) -> CommitMetadata:
        ts = self._tick()
        stats: dict[str, list[WriteStat]] = {}
        for p, fids in self.groups.items():
            stats[p] = []
            for fid in fids:
                rel = f"{p}/{BaseFileName(fid, TOKEN, ts)}"
                _placeholder(str(self.base / rel), BASE_BYTES)
                stats[p].append(WriteStat(file_id=fid, path=rel, partition_path=p, prev_commit="null", num_writes=100,
                                          num_inserts=100, file_size_in_bytes=BASE_BYTES,
                                          total_write_bytes=BASE_BYTES))
        return self._complete(ts, Action.DELTA_COMMIT, stats, "INSERT")

    def delta(self, partitions: list[str]) -> tuple[str, CommitMetadata]:
        """A delta commit writing a log file to every file group of `partitions`."""
        ts = self._tick()
        stats: dict[str, list[WriteStat]] = {}
        for p in partitions:
            stats[p] = []
            for fid in self.groups[p]:
                rel = f"{p}/{LogFileName(fid, ts, 1, TOKEN)}"
                _placeholder(str(self.base / rel), LOG_BYTES)
                stats[p].append(WriteStat(file_id=fid, path=rel, partition_path=p, num_writes=10,
                                          num_update_writes=10, file_size_in_bytes=LOG_BYTES,
                                          total_write_bytes=LOG_BYTES, total_log_blocks=1))
        return ts, self._complete(ts, Action.DELTA_COMMIT, stats, "UPSERT")

    def history(self, instants: int) -> None:
        """The insert, then delta commits round the table; the MDT's one delta commit at the last of them."""
        written = [self.insert()]
        deltas = max(1, instants - 1)
        step = -(-len(self.partitions) // deltas)
        ts = ""
        for n in range(deltas):
            start = (n * step) % len(self.partitions)
            ts, meta = self.delta(self.partitions[start:start + step])
            written.append(meta)
        everything: dict[str, list[WriteStat]] = {}
        for meta in written:
            for p, stats in meta.partition_to_write_stats.items():
                everything.setdefault(p, []).extend(stats)
        write_metadata_commit(HudiTable.load(str(self.base)), ts, Action.DELTA_COMMIT,
                              CommitMetadata(partition_to_write_stats=everything, operation_type="UPSERT"))

    def complete_compaction(self, instant: str) -> None:
        """The compaction plan `instant` done as TMS's executor leaves it: a new base file per operation."""
        table = HudiTable.load(str(self.base))
        plan = parse_compaction_plan(table.timeline.read_plan(instant))
        stats: dict[str, list[WriteStat]] = {}
        for op in plan.operations:
            part, fid = op.partition_path or "", op.file_id or ""
            rel = f"{part}/{BaseFileName(fid, TOKEN, instant)}"
            _placeholder(str(self.base / rel), BASE_BYTES)
            stats.setdefault(part, []).append(WriteStat(
                file_id=fid, path=rel, partition_path=part, num_writes=100,
                file_size_in_bytes=BASE_BYTES, total_write_bytes=BASE_BYTES, prev_commit=op.base_instant_time))
        meta = CommitMetadata(partition_to_write_stats=stats, operation_type="COMPACT")
        tl = table.timeline
        inflight = tl.transition_to_inflight(tl.states_of(instant)[State.REQUESTED])
        write_metadata_commit(table, instant, Action.COMMIT, meta)
        tl.complete(inflight, serialize_commit_metadata(meta, VERSION))

    def touch(self, count: int) -> None:
        self.clock = datetime.now(UTC)  # after the compaction plan, made now
        few = self.partitions[:: max(1, len(self.partitions) // count)][:count]
        ts, meta = self.delta(few)
        write_metadata_commit(HudiTable.load(str(self.base)), ts, Action.DELTA_COMMIT, meta)


def measure(kind: str, base: str, files: str | None = None) -> dict[str, Any]:
    """One plan or view in this process, its figures as a dict; a plan is removed after, except `first`.
    `clean-whole` plans and runs the clean (on a copy of the table) and writes the files it deleted to `files`;
    `clean-delete` deletes the files `files` names, and only that (on another copy)."""
    from service.table_view import live_view  # imported before the clock starts
    from service.ui.table_facts import read_table_facts
    from tms.db import TableRecord
    from tms.hudi.table.properties import TableType
    on_s3 = base.startswith("s3://")
    if threads := os.environ.get("GIANT_LISTING_THREADS"):  # the same view with listings one at a time
        import tms.hudi.fs_view.partitions as partitions
        partitions.LISTING_THREADS = int(threads)
    count_requests()
    table = HudiTable.load(base)
    now = datetime.now(UTC)
    row = TableRecord(id=0, base_path=base, name="", database="", table_type=TableType.MERGE_ON_READ,
                      table_version=8, created_at=now, updated_at=now)
    deleting = json.loads(Path(files).read_text()) if kind.startswith("clean-delete") and files else []
    REQUESTS.clear()
    if on_s3:
        s3_requests(reset=True)
    start = time.perf_counter()
    out: dict[str, Any] = {}
    if kind in ("first", "full", "incremental", "drain"):
        target = os.environ.get("GIANT_TARGET_IO_MB")  # hoodie.compaction.target.io (Hudi's 500 GB by default)
        policy = TablePolicy.from_stored({"hoodie.compaction.target.io": int(target)} if target else {})
        planned = plan_compaction(table, policy, now, force=True,
                                  full_pass_every=None if kind in ("first", "full") else FULL_PASS_EVERY)
        seconds, out["peak_mb"] = time.perf_counter() - start, _peak_mb()  # the plan read back below is the bench's
        if planned is None:
            raise SystemExit(f"{kind}: nothing was planned")
        compaction = parse_compaction_plan(table.timeline.read_plan(planned.instant))
        out["operations"] = len(compaction.operations)
        out["instant"] = planned.instant
        out["left_out"] = len(compaction.missing_schedule_partitions or [])
        if kind == "first":  # the parts its job runs in (tms.execute.parts), on a 64-slot queue
            from tms.execute.compaction import CompactionExecutor
            requested = table.timeline.get(planned.instant)
            assert requested is not None
            sizes = CompactionExecutor(table, requested).task_bytes([])
            parts = cut_into_parts(sizes, 1024**3, 64)  # TMS_WORKER_PART_BYTES=1 GiB
            out["parts"] = len(parts)
            out["largest_part_mb"] = max(sum(sizes[i] for i in part) for part in parts) / 2**20
        if kind not in ("first", "drain"):
            table.timeline.delete_pending(planned.instant)
    elif kind == "clean":
        cleaned = plan_clean_or_why(table, TablePolicy.from_stored(CLEAN_POLICY), now)
        seconds, out["peak_mb"] = time.perf_counter() - start, _peak_mb()
        if not isinstance(cleaned, Planned):
            raise SystemExit(f"clean: {cleaned}")
        plan = parse_cleaner_plan(table.timeline.read_plan(cleaned.instant))
        out["files"] = sum(len(infos) for infos in plan.file_paths_to_be_deleted_per_partition.values())
        out["partitions"] = len(plan.file_paths_to_be_deleted_per_partition)
        table.timeline.delete_pending(cleaned.instant)
    elif kind == "clean-whole":
        cleaned = plan_clean_or_why(table, TablePolicy.from_stored(CLEAN_POLICY), now)
        planned_at = time.perf_counter()
        if not isinstance(cleaned, Planned):
            raise SystemExit(f"clean: {cleaned}")
        done = execute_instant(table, cleaned.instant, LocalRunner(), no_fence)  # as the worker runs it
        seconds = time.perf_counter() - start
        out.update(plan_seconds=planned_at - start, files=done.files_deleted)
        table.timeline.reload()
        meta = parse_clean_metadata(table.timeline.read(table.timeline.states_of(cleaned.instant)[State.COMPLETED]))
        deleted = [f"{p}/{name}" for p, pm in meta.partition_metadata.items() for name in pm.success_delete_files]
        Path(files or f"{base}.deleted.json").write_text(json.dumps(deleted))
    elif kind.startswith("clean-delete") and on_s3:
        gone = _s3_delete(base, deleting, batched=kind == "clean-delete-batched")
        seconds = time.perf_counter() - start
        out["files"] = gone
    elif kind == "clean-delete":
        gone = 0
        for rel in deleting:  # the files alone: one unlink each, no check, no batch record, no metadata
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(base, rel))
                gone += 1
        seconds = time.perf_counter() - start
        if gone != len(deleting):
            raise SystemExit(f"clean-delete: {len(deleting) - gone} of {len(deleting)} files were not there")
        out["files"] = gone
    else:  # api, page
        view = live_view(base, TablePolicy(), {}, True, table=table)
        if kind == "page":
            facts = read_table_facts(row, [], with_timeline=True, table=table)
            if facts.error:
                raise SystemExit(facts.error)
        seconds = time.perf_counter() - start
        stats = view["file_group_stats"]
        out["file_groups"] = stats.file_groups if stats else None
        out["health"] = view["health"].status
        out["answer_bytes"] = len(json.dumps({k: v.model_dump(mode="json") if hasattr(v, "model_dump") else None
                                              for k, v in view.items() if k == "file_group_stats"}))
    out.setdefault("peak_mb", _peak_mb())
    out.update(seconds=seconds, requests=sum(s3_requests().values()) if on_s3 else sum(REQUESTS.values()))
    return out


def _s3_delete(base: str, rels: list[str], batched: bool) -> int:
    """Delete the files alone on S3: a DeleteObject each (as an unlink each on a disk), or (`batched`) a
    DeleteObjects per 1,000 keys, the requests TMS's clean makes; nothing else."""
    import boto3
    bucket, prefix = base[len("s3://"):].split("/", 1)
    client = boto3.client("s3")
    keys = [f"{prefix}/{rel}" for rel in rels]
    if not batched:
        for key in keys:
            client.delete_object(Bucket=bucket, Key=key)
        return len(keys)
    for at in range(0, len(keys), 1000):
        client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[at:at + 1000]],
                                                     "Quiet": True})
    return len(keys)


def _peak_mb() -> float:
    """This process's peak resident memory: VmHWM on Linux (ru_maxrss survives exec, so a child started by a
    parent that built a big table would report the parent's), else ru_maxrss."""
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(kind: str, base: Path | str, *more: str, listing_threads: int | None = None) -> dict[str, Any]:
    env = {**os.environ, "GIANT_LISTING_THREADS": str(listing_threads)} if listing_threads else None
    done = subprocess.run([sys.executable, __file__, "--measure", kind, str(base), *more], check=True,
                          capture_output=True, text=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


class LocalStore:
    """The table where it is built, on the local disk."""

    def __init__(self, base: Path):
        self.base = base

    def table(self) -> str:
        return str(self.base)

    def plan_written(self) -> None:
        """A plan was written to the table (here: where the bench's writer finds it)."""

    def table_changed(self) -> None:
        """The bench's writer changed the table."""

    @contextlib.contextmanager
    def copy(self, name: str) -> Iterator[str]:
        copy = self.base.with_name(name)
        # The placeholders stay sparse (their sizes are what planning reads, not their bytes)
        subprocess.run(["cp", "-a", "--sparse=always", str(self.base), str(copy)], check=True)
        try:
            yield str(copy)
        finally:
            shutil.rmtree(copy, ignore_errors=True)


class S3Store(LocalStore):
    """The table on the S3 test endpoint (bench/giant_s3.py), seeded from where it is built: the writer works on
    the local folder, each change seeded again; a plan written on S3 is copied back for the writer."""

    KEY = "t"

    def __init__(self, base: Path, endpoint: GiantS3):
        super().__init__(base)
        self.endpoint = endpoint
        started = time.perf_counter()
        objects = endpoint.seed(base, self.KEY)
        print(f"seeded on the S3 test endpoint {endpoint.url}: {objects} objects in "
              f"{time.perf_counter() - started:.1f} s (the server's own puts)", flush=True)

    def table(self) -> str:
        return f"s3://{BUCKET}/{self.KEY}"

    def plan_written(self) -> None:
        self.endpoint.fetch(self.KEY, self.base)

    def table_changed(self) -> None:
        self.endpoint.seed(self.base, self.KEY)

    @contextlib.contextmanager
    def copy(self, name: str) -> Iterator[str]:
        self.endpoint.seed(self.base, name)
        yield f"s3://{BUCKET}/{name}"


def _whole_clean(store: LocalStore, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    """The whole clean (plan and execution) on a copy of the table, then the deletes of the same files alone on
    another copy each; the table itself is left as it was."""
    files = store.base.with_name("cleaned-files.json")
    figures = []
    for kind in ("clean-whole", *kinds):
        with store.copy(kind) as copy:
            figures.append(_child(kind, copy, str(files)))
    files.unlink(missing_ok=True)
    return figures


def _print_whole_clean(store: LocalStore) -> tuple[dict[str, Any], dict[str, Any]]:
    """The whole clean and the deletes alone (on S3 also batched, the requests TMS's clean makes)."""
    batched = ("clean-delete-batched",) if isinstance(store, S3Store) else ()
    whole, alone, *more = _whole_clean(store, ("clean-delete", *batched))
    _line("whole clean (plan + execute)", whole, f"{whole['files']} files (plan {whole['plan_seconds']:.2f} s)")
    _line("deleting the same files alone", alone, f"{alone['files']} files" + (", a request each" if more else ""))
    for figures in more:
        _line("  the same, 1,000 a request", figures, f"{figures['files']} files (whole clean / these "
                                                      f"{whole['seconds'] / figures['seconds']:.1f})")
    return whole, alone


def _clean_only(giant: GiantTable, store: LocalStore, touched: int) -> int:
    first = _child("first", store.table())
    _line("first compaction plan (full pass)", first, f"{first['operations']} operations")
    store.plan_written()
    giant.complete_compaction(first["instant"])
    giant.touch(touched)
    store.table_changed()
    whole, alone = _print_whole_clean(store)
    executed = whole["seconds"] - whole["plan_seconds"]
    print(f"RATIO whole clean / deleting its files alone {whole['seconds'] / alone['seconds']:.2f} (goal <= 2); "
          f"its execution alone / the deletes alone {executed / alone['seconds']:.2f}")
    return 0


def _line(what: str, r: dict[str, Any], extra: str = "") -> None:
    print(f"{what:34s} {r['seconds']:8.2f} s  peak {r['peak_mb']:7.0f} MB  {r['requests']:8d} requests  {extra}",
          flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--file-groups", type=int, default=1_000_000)
    ap.add_argument("--instants", type=int, default=10_000)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies the three sizes (0.01: a hundredth)")
    ap.add_argument("--touched", type=int, default=10, help="partitions the delta commit after the first plan writes")
    ap.add_argument("--dir", type=Path, help="where to build the table (default: a scratch folder, removed after)")
    ap.add_argument("--view-only", action="store_true",
                    help="only the live view and the table page (item 5), no plans: a larger table in the time")
    ap.add_argument("--clean-only", action="store_true",
                    help="only the whole clean against its deletes alone (after the first compaction plan, which "
                         "it needs, completed): the clean figure in a third of the time")
    ap.add_argument("--no-whole-clean", action="store_true",
                    help="leave out the whole clean against its deletes alone (on S3 at a tenth of the size, a "
                         "DeleteObject a file is over an hour at the endpoint's pace)")
    ap.add_argument("--s3", action="store_true",
                    help="the table on the S3 test endpoint (moto, bench/giant_s3.py), built on the local disk first")
    ap.add_argument("--s3-latency-ms", type=float, default=0.0,
                    help="with --s3: each request waits this long on the endpoint, outside its one-at-a-time lock, "
                         "as on a real store's network (0: moto's own pace only)")
    ap.add_argument("--target-io-mb", type=int,
                    help="hoodie.compaction.target.io of every compaction plan (default: Hudi's, 500 GB)")
    ap.add_argument("--drain", action="store_true",
                    help="after the first plan completed, plan and complete incrementally until a plan leaves no "
                         "partition out (the backlog a plan bounded by the target IO leaves), before the commit "
                         "touching --touched partitions: the next plan then measured in the steady state")
    ap.add_argument("--measure", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.target_io_mb:
        os.environ["GIANT_TARGET_IO_MB"] = str(args.target_io_mb)  # the measuring processes plan with it
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return 0
    if args.scale <= 0:
        raise SystemExit("--scale must be above 0")
    partitions = max(1, round(args.partitions * args.scale))
    file_groups = max(partitions, round(args.file_groups * args.scale))
    instants = max(2, round(args.instants * args.scale))
    root = args.dir or Path(tempfile.mkdtemp(prefix="tms-giant-"))
    base = root / "t"
    endpoint = None
    try:
        start = time.perf_counter()
        giant = GiantTable(base, partitions, file_groups)
        giant.history(instants)
        print(f"table: {partitions} partitions, {file_groups} file groups, {instants} instants, metadata table "
              f"(files); built in {time.perf_counter() - start:.1f} s", flush=True)
        store = LocalStore(base)
        if args.s3:
            endpoint = GiantS3.start(root / "moto.log", latency_ms=args.s3_latency_ms)
            os.environ.update(endpoint.env())  # the measuring processes reach it
            store = S3Store(base, endpoint)
        if args.clean_only:
            return _clean_only(giant, store, args.touched)
        table = store.table()
        api = _child("api", table)
        _line("GET /api/v1/tables/{id} (storage)", api, f"{api['file_groups']} file groups, {api['answer_bytes']} "
                                                       "bytes of file_group_stats")
        page = _child("page", table)
        _line("table page (storage)", page)
        if args.s3:  # side by side: the same page with its folder listings one at a time
            serial = _child("page", table, listing_threads=1)
            _line("table page (storage), listings one at a time", serial,
                  f"{serial['seconds'] / page['seconds']:.1f}x the page's time")
        if args.view_only:
            print(f"API {api['seconds']:.2f} s, page {page['seconds']:.2f} s (goal <= 1 s)")
            return 0
        first = _child("first", table)
        _line("first compaction plan (full pass)", first,
              f"{first['operations']} operations, {first['left_out']} partitions left out")
        print(f"    its job's parts: {first['parts']} (largest {first['largest_part_mb']:.0f} MB)")
        start = time.perf_counter()
        store.plan_written()
        giant.complete_compaction(first["instant"])
        left_out = first["left_out"]
        while args.drain and left_out:
            store.table_changed()
            drained = _child("drain", table)
            _line("  draining the backlog, a plan", drained,
                  f"{drained['operations']} operations, {drained['left_out']} partitions left out")
            store.plan_written()
            giant.complete_compaction(drained["instant"])
            left_out = drained["left_out"]
        giant.touch(args.touched)
        store.table_changed()
        print(f"compaction completed, a delta commit over {args.touched} partitions: "
              f"{time.perf_counter() - start:.1f} s", flush=True)
        full = _child("full", table)
        _line("next compaction plan, full pass", full, f"{full['operations']} operations")
        inc = _child("incremental", table)
        _line("next compaction plan, incremental", inc, f"{inc['operations']} operations")
        clean = _child("clean", table)
        _line("clean plan", clean, f"{clean['files']} files in {clean['partitions']} partitions")
        measured = [first, full, inc, clean]
        whole_clean = "whole clean not measured (--no-whole-clean)"
        if not args.no_whole_clean:
            whole, alone = _print_whole_clean(store)
            measured.append(whole)
            whole_clean = (f"whole clean / deleting its files alone {whole['seconds'] / alone['seconds']:.1f} "
                           "(goal <= 2)")
        peak = max(r["peak_mb"] for r in measured)
        print(f"RATIOS incremental / full pass: {inc['seconds'] / full['seconds']:.3f} in time (goal <= 0.05), "
              f"{inc['requests'] / max(1, full['requests']):.4f} in requests; incremental {inc['seconds']:.2f} s "
              f"(goal <= 1 s); peak of any plan {peak:.0f} MB (goal <= 1024); API {api['seconds']:.2f} s, "
              f"page {page['seconds']:.2f} s (goal <= 1 s); {whole_clean}")
        return 0
    finally:
        if endpoint is not None:
            endpoint.stop()
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("TMS_LOG_LEVEL", "WARNING")
    sys.exit(main())
