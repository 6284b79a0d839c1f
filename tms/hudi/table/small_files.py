"""Where a writer puts new records: into the partition's small file groups first, as Hudi's writers do
(UpsertPartitioner and, on MERGE_ON_READ, SparkUpsertDeltaCommitPartitioner), so a table written in small
batches does not gain a file group per batch; what does not fit goes to new file groups.

A file group is small while its latest slice is below `hoodie.parquet.small.file.limit`: the base file's
size, plus on MERGE_ON_READ its log files' size scaled by `hoodie.logfile.to.parquet.compression.ratio`. It
takes as many records as fit below `hoodie.parquet.max.file.size` at the table's average record size (from
the newest write that wrote enough bytes to tell, else `hoodie.copyonwrite.record.size.estimate`). Groups in
a pending clustering take none (their updates are refused too).

On MERGE_ON_READ the records go to the group's log, as Hudi does with an index that finds keys in log
files (TMS's writer looks keys up in every slice's base and logs). A writer whose index looks at base files
only (Hudi's bloom and simple indexes) would not find them there: do not turn small-file routing on for a
table such a writer also writes. Unlike Hudi's writers, a group being compacted takes new records too, in the
log of the slice its compaction opened (where its updates go): with compactions running most of the time, as
TMS runs them, Hudi's rule would start a new file group with nearly every commit."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..config import write as write_config
from ..errors import HudiError
from ..fs_view.view import FileSlice, FileSystemView
from ..timeline.timeline import Timeline

SMALL_FILE_LIMIT = write_config.PARQUET_SMALL_FILE_LIMIT.key
MAX_FILE_SIZE = write_config.PARQUET_MAX_FILE_SIZE.key
RECORD_SIZE_ESTIMATE = write_config.RECORD_SIZE_ESTIMATE.key
LOG_TO_PARQUET_RATIO = write_config.LOG_TO_PARQUET_RATIO.key
OPTIONS = (SMALL_FILE_LIMIT, MAX_FILE_SIZE, RECORD_SIZE_ESTIMATE, LOG_TO_PARQUET_RATIO)
# How many of the newest writes the average record size is looked for in (Hudi looks through all of them;
# a long timeline would make every write read every commit's metadata).
RECORD_SIZE_LOOKBACK = 20


@dataclass(frozen=True)
class FileSizing:
    """Hudi's file-sizing options. TMS's writer routes no record to small files unless a limit is set (Hudi's
    writers default it to 100 MB): tests and tools rely on each insert batch making its own file groups."""

    small_file_limit: int = write_config.PARQUET_SMALL_FILE_LIMIT.default
    max_file_size: int = write_config.PARQUET_MAX_FILE_SIZE.default
    record_size_estimate: int = write_config.RECORD_SIZE_ESTIMATE.default
    log_to_parquet_ratio: float = write_config.LOG_TO_PARQUET_RATIO.default

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> FileSizing:
        """From `hoodie.*` options given as strings (others are ignored); a bad value raises HudiError."""
        return cls(small_file_limit=write_config.PARQUET_SMALL_FILE_LIMIT.value(options),
                   max_file_size=write_config.PARQUET_MAX_FILE_SIZE.value(options),
                   record_size_estimate=write_config.RECORD_SIZE_ESTIMATE.value(options),
                   log_to_parquet_ratio=write_config.LOG_TO_PARQUET_RATIO.value(options))

    @property
    def routes(self) -> bool:
        return self.small_file_limit > 0


def slice_size(fs: FileSlice, sizing: FileSizing) -> int:
    """The slice's expected size as a base file (its logs scaled to parquet)."""
    return fs.base_size + int(fs.log_bytes * sizing.log_to_parquet_ratio)


def average_record_size(timeline: Timeline, sizing: FileSizing) -> int:
    """Bytes per record of the newest completed write that wrote more than the small-file limit, else the
    estimate (AverageRecordSizeUtils)."""
    for inst in reversed(timeline.completed_writes()[-RECORD_SIZE_LOOKBACK:]):
        try:
            stats = [s for ss in timeline.commit_metadata(inst).partition_to_write_stats.values() for s in ss]
        except (OSError, HudiError):
            continue
        written = sum(s.total_write_bytes for s in stats)
        records = sum(s.num_writes for s in stats)
        if written > sizing.small_file_limit and records > 0:
            return max(1, written // records)
    return sizing.record_size_estimate


def small_file_capacity(view: FileSystemView, partition: str, sizing: FileSizing, record_size: int, *,
                        merge_on_read: bool) -> list[tuple[str, int]]:
    """The partition's small file groups with how many records each takes, smallest first."""
    busy = set(view.pending_clustering)
    out = []
    for fs in view.merged_latest_slices():
        if fs.partition != partition or (partition, fs.file_id) in busy:
            continue
        if not merge_on_read and fs.base_file is None:
            continue
        size = slice_size(fs, sizing) if merge_on_read else fs.base_size
        if size < sizing.small_file_limit:
            room = (sizing.max_file_size - size) // record_size
            if room > 0:
                out.append((size, fs.file_id, room))
    return [(fid, room) for _, fid, room in sorted(out)]


def route_inserts(positions: list[int], capacity: list[tuple[str, int]]) -> tuple[dict[str, list[int]], list[int]]:
    """New records' positions split into those each small file group takes, in order, and the rest."""
    routed: dict[str, list[int]] = {}
    rest = positions
    for fid, room in capacity:
        if not rest:
            break
        routed[fid], rest = rest[:room], rest[room:]
    return routed, rest
