"""Index bodies: a metadata-table partition to build, and the partitions a table has."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .common import ShortText


class IndexIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    partition: ShortText = Field(description="The metadata-table partition to build: files, column_stats, "
                                             "bloom_filters, record_index, partition_stats, or a secondary "
                                             "index secondary_index_<name> (with `column`)")
    column: ShortText | None = Field(None, description="The column a secondary index indexes (secondary indexes "
                                                       "only)")


class IndexesOut(BaseModel):
    table_id: int
    built: list[str] = Field(description="hoodie.table.metadata.partitions")
    building: list[str] = Field(description="hoodie.table.metadata.partitions.inflight: an indexing instant "
                                            "is building them")
