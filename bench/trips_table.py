"""The benchmarks' table: a MOR trips table of `rows` rows, then `update_fraction` of them updated (with a
later ordering value) through log files."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import HudiWriter

CITIES = np.array(["san_francisco", "sao_paulo", "chennai", "berlin"])


def trips_records(rows: int, rng: np.random.Generator) -> pa.Table:
    """`rows` trips, keyed `trip-000000000`..., spread over the cities."""
    ids = np.arange(rows)
    return pa.table({
        "uuid": pa.array([f"trip-{i:09d}" for i in ids]),
        "ts": pa.array(rng.integers(1_000, 2_000, rows), pa.int64()),
        "rider": pa.array([f"rider-{i % 997}" for i in ids]),
        "driver": pa.array([f"driver-{i % 991}" for i in ids]),
        "fare": pa.array(rng.uniform(5, 90, rows)),
        "city": pa.array(CITIES[ids % len(CITIES)]),
    })


def build_trips_table(path: Path, rows: int, update_fraction: float, *, file_rows: int = 100_000,
                      version: int = 8, log_blocks: str = "avro", metadata: list[str] | None = None) -> None:
    """`metadata`: the metadata table partitions to create the table with (none: no metadata table)."""
    rng = np.random.default_rng(7)
    records = trips_records(rows, rng)
    writer = HudiWriter.create_table(str(path), table_type="MERGE_ON_READ", version=version, key=["uuid"],
                                     ordering=["ts"], partition=["city"], schema=records.schema,
                                     log_block_format=log_blocks, max_file_records=file_rows)
    if metadata:
        from tms.hudi.metadata.init import create_metadata_table
        create_metadata_table(writer.table, metadata)
    writer.write(records, "insert")
    updated = np.sort(rng.choice(rows, int(rows * update_fraction), replace=False))
    updates = records.take(pa.array(updated)).set_column(
        1, "ts", pa.array(rng.integers(2_000, 3_000, len(updated)), pa.int64()))
    HudiWriter(HudiTable.load(str(path)), log_block_format=log_blocks).write(updates, "upsert")
