"""The file groups a table's live view and page judge it by, at a cost that follows a bound and never the table's
size: every partition of a table with few, an evenly spaced sample of a giant table's (issue 37, item 5), its
totals estimated from the sample."""
from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

from tms.hudi.fs_view.partitions import PartitionListing, sample_partition_folders
from tms.hudi.fs_view.view import FileGroupStats
from tms.hudi.table.hudi_table import HudiTable

# Folder listings a live view makes at most: a table of more partitions is sampled (about half as many).
VIEW_LISTINGS = 200


@dataclass(frozen=True)
class FileGroupSample:
    groups: list[FileGroupStats]  # of the partitions read
    listing: PartitionListing     # those partitions, with their listings
    share: float                  # of the table's partitions they stand for (1.0: all of them)

    @property
    def sampled(self) -> bool:
        return self.share < 1.0

    def estimate(self, counted: int) -> int:
        """`counted` over the partitions read, for the whole table."""
        return round(counted / self.share) if self.share > 0 else counted


# One sample per loaded table: the page's parts (the live view, its facts) read one table once.
_SAMPLES: WeakKeyDictionary[HudiTable, FileGroupSample] = WeakKeyDictionary()


def file_group_sample(table: HudiTable) -> FileGroupSample:
    """The file groups of the partitions VIEW_LISTINGS folder listings find: all of them on a table of fewer
    partitions, with record counts; else an evenly spaced sample, without (a giant table's compaction commit
    names a million files)."""
    cached = _SAMPLES.get(table)
    if cached is None:
        found = sample_partition_folders(table.storage, VIEW_LISTINGS)
        groups = table.file_system_view(listing=found.listing).file_group_stats(record_counts=found.complete)
        cached = _SAMPLES[table] = FileGroupSample(groups, found.listing, found.share)
    return cached
