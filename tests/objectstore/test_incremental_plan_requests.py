"""On S3 (the moto server), an incremental compaction plan's requests do not follow the table's size: a planner
that loads the table cold and plans after a delta commit touching 10 partitions makes as many requests on a
table of 10,000 partitions as on one of 100 (issue 37's Proof: ratio <= 1.1).

Both tables are synthesised the same way, as bench/giant_table.py makes its table: the instant files are
serialised and written straight into the timeline folder (a delta commit starting every file group with a log
file, a full-pass compaction plan of every file group as TMS records it, its commit, then the delta commit
touching 10 partitions). Only the touched partitions' files are written: moto takes a request at a time
(about 50 PUTs a second on a loaded machine), and the plan never lists the others. Were it to, it would list
each partition the timeline names (tms.hudi.fs_view.partitions.list_partitions), present or not, and its
requests would follow the table's size."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import s3fs

from tms.hudi.fs_view.file_names import BaseFileName, LogFileName
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import HudiWriter
from tms.hudi.timeline.instant import Action, Instant, State, instant_file_name, new_instant_time
from tms.hudi.timeline.serde import (
    CommitMetadata,
    CompactionOperation,
    CompactionPlan,
    WriteStat,
    parse_compaction_plan,
    serialize_commit_metadata,
    serialize_compaction_plan,
)
from tms.planning.compaction import plan_compaction
from tms.planning.incremental import full_scope, policy_digest
from tms.planning.policy import TablePolicy
from tms.table_service import TableService

VERSION = 8
TOKEN = "0-0-0"
TOUCHED = 10


class SynthesisedTable:
    """A MERGE_ON_READ v8 table of `partitions` partitions of one file group each, written to S3 in bulk."""

    def __init__(self, s3_endpoint, base: str, partitions: int):
        schema = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("city", pa.string())])
        HudiWriter.create_table(base, table_type="MERGE_ON_READ", version=VERSION, key=["id"], ordering=["ts"],
                                partition=["city"], schema=schema)
        self.endpoint, self.prefix = s3_endpoint, s3_endpoint.key(base)
        config = HudiTable.load(base).config
        self.zone, self.timeline_dir = config.timeline_zone, config.timeline_dir
        self.partitions = [f"city=p{n:05d}" for n in range(partitions)]
        self.touched = self.partitions[:: partitions // TOUCHED]
        self.clock = datetime.now(UTC) - timedelta(hours=1)
        self.objects: dict[str, bytes] = {}

    def _tick(self) -> str:
        self.clock += timedelta(seconds=1)
        return new_instant_time(self.zone, self.clock)

    def _instant(self, ts: str, pending: str, action: str, requested: bytes, completed: bytes) -> None:
        for inst, content in ((Instant(ts, State.REQUESTED, pending), requested),
                              (Instant(ts, State.INFLIGHT, pending), b""),
                              (Instant(ts, State.COMPLETED, action, self._tick()), completed)):
            self.objects[f"{self.timeline_dir}/{instant_file_name(inst, VERSION)}"] = content

    def _delta_commit(self, partitions: list[str], name_of: dict[str, str], operation: str) -> str:
        """A delta commit writing the file `name_of` (a format of its instant time) names in each partition."""
        ts = self._tick()
        stats = {p: [WriteStat(file_id=fid(p), path=f"{p}/{name_of[p].format(ts=ts)}", partition_path=p,
                               num_writes=1, file_size_in_bytes=1, total_write_bytes=1)] for p in partitions}
        meta = CommitMetadata(partition_to_write_stats=stats, operation_type=operation)
        self._instant(ts, Action.DELTA_COMMIT, Action.DELTA_COMMIT, b"", serialize_commit_metadata(meta, VERSION))
        for p in set(partitions) & set(self.touched):  # the only partitions whose files are written
            self.objects[f"{p}/{name_of[p].format(ts=ts)}"] = b"x"
            self.objects[f"{p}/.hoodie_partition_metadata"] = b"commitTime=0\npartitionDepth=1\n"
        return ts

    def build(self) -> None:
        """A delta commit starting every file group with a log file, a full-pass compaction of them all, a delta
        commit over TOUCHED partitions; written with parallel PUTs."""
        first = self._delta_commit(self.partitions, {p: str(LogFileName(fid(p), "{ts}", 1, TOKEN))
                                                     for p in self.partitions}, "UPSERT")
        tc = self._tick()
        plan = CompactionPlan(
            operations=[CompactionOperation(base_instant_time=first, file_id=fid(p), partition_path=p,
                                            delta_file_paths=[str(LogFileName(fid(p), first, 1, TOKEN))])
                        for p in self.partitions],
            extra_metadata=full_scope("the first plan", policy_digest(TablePolicy(), TableService.COMPACTION))
            .metadata(),
            missing_schedule_partitions=[])
        compacted = {p: [WriteStat(file_id=fid(p), path=f"{p}/{BaseFileName(fid(p), TOKEN, tc)}", partition_path=p,
                                   num_writes=1, file_size_in_bytes=1, total_write_bytes=1)] for p in self.partitions}
        self._instant(tc, Action.COMPACTION, Action.COMMIT, serialize_compaction_plan(plan),
                      serialize_commit_metadata(CommitMetadata(partition_to_write_stats=compacted,
                                                               operation_type="COMPACT"), VERSION))
        for p in self.touched:
            self.objects[f"{p}/{BaseFileName(fid(p), TOKEN, tc)}"] = b"x"
        self._delta_commit(self.touched, {p: str(LogFileName(fid(p), "{ts}", 1, TOKEN)) for p in self.touched},
                           "UPSERT")
        client, bucket = self.endpoint.client(), self.endpoint.bucket
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda item: client.put_object(Bucket=bucket, Key=f"{self.prefix}/{item[0]}",
                                                         Body=item[1]), self.objects.items()))


def fid(partition: str) -> str:
    return f"{int(partition.rsplit('p', 1)[1]):08x}-0000-4000-8000-000000000000-0"


def test_an_incremental_plan_makes_as_many_s3_requests_on_10000_partitions_as_on_100(s3_endpoint, s3_base,
                                                                                   monkeypatch):
    requests: list[str] = []
    call_s3 = s3fs.S3FileSystem._call_s3

    async def counted(self, method, *args, **kwargs):
        requests.append(method)
        return await call_s3(self, method, *args, **kwargs)

    counts = {}
    for partitions in (100, 10_000):
        base = f"{s3_base}/t{partitions}"
        table = SynthesisedTable(s3_endpoint, base, partitions)
        table.build()
        with monkeypatch.context() as m:
            m.setattr(s3fs.S3FileSystem, "_call_s3", counted)
            requests.clear()
            loaded = HudiTable.load(base)  # a cold planner: the last plan's scope is read from its file
            planned = plan_compaction(loaded, TablePolicy(), datetime.now(UTC), force=True,
                                      full_pass_every=timedelta(days=1))
            counts[partitions] = len(requests)
        assert planned is not None and planned.scope.startswith("incremental"), planned
        plan = parse_compaction_plan(loaded.timeline.read_plan(planned.instant))
        assert sorted(op.partition_path for op in plan.operations) == table.touched
    assert counts[100] > 0
    assert counts[10_000] / counts[100] <= 1.1, counts
