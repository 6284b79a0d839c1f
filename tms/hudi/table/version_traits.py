"""What a table version means for the files Hudi reads and writes, in one place and named by what each
difference is: table version 6 (Hudi 0.14/0.15), 8 (Hudi 1.0) and 9 (Hudi 1.1). Code asks the table's traits
(`TableConfig.traits`) what it needs to know (`traits.completion_times`), never compares version numbers."""
from __future__ import annotations

from dataclasses import dataclass

SUPPORTED_VERSIONS = (6, 8, 9)


@dataclass(frozen=True)
class TableVersionTraits:
    version: int

    @property
    def is_hudi_1(self) -> bool:
        """Hudi 1.x's table layout (v8+): its properties (`hoodie.table.initial.version`, key generator types)."""
        return self.version >= 8

    @property
    def completion_times(self) -> bool:
        """A completed instant records when it completed, in its file name (`<ts>_<completion>.<action>`, the
        LSM timeline, v8+); instants then order by completion time. v6: by instant time only."""
        return self.version >= 8

    @property
    def timeline_folder_of_its_own(self) -> bool:
        """The timeline lives in `.hoodie/timeline` (`hoodie.timeline.path`, v8+), not in `.hoodie` itself."""
        return self.version >= 8

    @property
    def clustering_action(self) -> bool:
        """A clustering is written as the `clustering` action (v8+); v6 writes it as a `replacecommit`."""
        return self.version >= 8

    @property
    def log_files_named_by_writer(self) -> bool:
        """Each write adds log files named by its own instant (version 1) and slices go by completion time
        (v8+); on v6 a log file names the base instant of its slice, and writes append to it or add the next
        version."""
        return self.version >= 8

    @property
    def event_time_ordering_by_default(self) -> bool:
        """Without a merge mode or payload, a table with ordering fields merges by event time (v8+); v6's default
        payload (OverwriteWithLatestAvroPayload) merges by commit time."""
        return self.version >= 8

    @property
    def non_blocking_concurrency(self) -> bool:
        """NON_BLOCKING_CONCURRENCY_CONTROL exists (v8+, MERGE_ON_READ tables)."""
        return self.version >= 8

    @property
    def avro_commit_metadata(self) -> bool:
        """Commit metadata is an Avro container (v8+); v6 writes Jackson JSON."""
        return self.version >= 8

    @property
    def indexes_in_table_config(self) -> bool:
        """The metadata table's index definitions (the columns it keeps statistics of) are the table's (v8+);
        Hudi 0.x keeps them in the writers' config."""
        return self.version >= 8

    @property
    def payload_precombines_log_records(self) -> bool:
        """Hudi 0.x folds a key's log records with its payload's preCombine, which keeps the greater ordering value
        whatever the payload (OverwriteWithLatestAvroPayload's too); only the merge with the base file follows
        the payload (under commit-time ordering the log's record replaces the base row)."""
        return self.version < 8

    @property
    def lance_base_files(self) -> bool:
        """Base files may be Lance files (v9, Hudi 1.1)."""
        return self.version >= 9

    @property
    def ordering_fields_property(self) -> str:
        """The property naming the ordering fields: `hoodie.table.ordering.fields` (v9), before it the
        precombine field."""
        return "hoodie.table.ordering.fields" if self.version >= 9 else "hoodie.table.precombine.field"

    @property
    def merge_mode_implies_strategy(self) -> bool:
        """The merge strategy follows from the merge mode and is not written (v9); v8 writes its id."""
        return self.version >= 9

    @property
    def timeline_layout_version(self) -> str:
        """`hoodie.timeline.layout.version`: 2 for Hudi 1.x's timeline, 1 before."""
        return "2" if self.is_hudi_1 else "1"

    @property
    def metadata_records_v2(self) -> bool:
        """The metadata table's records are Hudi 1.1's (v9): its schema, and statistics wrapped as index
        version 2 (value types recorded)."""
        return self.version >= 9
