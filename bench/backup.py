"""Backup benchmark: a daily backup of a table of 1,000 files in which 1% of the files changed since the last
backup, against a full copy of the same table in one run: bytes copied and time of each, and their ratio
(goal, issue 23: the daily backup copies <= 0.05x the full copy's bytes).

    .venv/bin/python bench/backup.py                     # 1,000 files of 200 rows, 1% changed
    .venv/bin/python bench/backup.py --files 200 --file-rows 100 --changed 0.05

The table is a COPY_ON_WRITE (v8) table partitioned by city, written by TMS's writer with `--file-rows` rows
per file. Version 1 backs it up whole; then one update commit changes a few rows in `--changed` of its files
(each is rewritten, as copy-on-write does); version 2 is the daily backup. The full copy is a backup of the
table as it is then into an empty destination: the same files version 2 holds, every one copied. Both run
in-process to a local destination (tms.backup.take, through the storage abstraction)."""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from trips_table import trips_records  # noqa: E402

from tms.backup.layout import BackupStore  # noqa: E402
from tms.backup.take import take_backup  # noqa: E402
from tms.hudi.table.hudi_table import HudiTable  # noqa: E402
from tms.hudi.table.writer import HudiWriter  # noqa: E402


def build_table(path: Path, files: int, file_rows: int) -> HudiWriter:
    records = trips_records(files * file_rows, np.random.default_rng(7))
    writer = HudiWriter.create_table(str(path), table_type="COPY_ON_WRITE", version=8, key=["uuid"],
                                     ordering=["ts"], partition=["city"], schema=records.schema,
                                     max_file_records=file_rows)
    writer.write(records, "insert")
    return writer


def change_files(writer: HudiWriter, path: Path, fraction: float) -> int:
    """One update commit touching a row of `fraction` of the table's base files; the number of files touched."""
    table = HudiTable.load(str(path))
    slices = [s for s in table.file_system_view().latest_slices() if s.base_file is not None]
    chosen = slices[:: max(1, round(1 / fraction))][: max(1, round(len(slices) * fraction))]
    keys = []
    for s in chosen:
        assert s.base_file is not None
        column = pq.read_table(str(path / s.base_file.path), columns=["uuid", "ts", "rider", "driver", "fare", "city"])
        keys.append(column.slice(0, 1))
    updates = pa.concat_tables(keys)
    updates = updates.set_column(1, "ts", pa.array([5_000] * updates.num_rows, pa.int64()))
    writer.write(updates, "upsert")
    return len(chosen)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--file-rows", type=int, default=200)
    ap.add_argument("--changed", type=float, default=0.01, help="fraction of the files changed since the last backup")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tms-bench-backup-") as scratch:
        root = Path(scratch)
        table_path = root / "trips"
        started = time.perf_counter()
        writer = build_table(table_path, args.files, args.file_rows)
        data_files = sum(1 for p in table_path.rglob("*.parquet") if ".hoodie" not in p.parts)
        print(f"table: {data_files} data files, {args.files * args.file_rows} rows "
              f"(written in {time.perf_counter() - started:.1f} s)")
        store = BackupStore(str(root / "backups"))
        first = take_backup(HudiTable.load(str(table_path)), store)
        print(f"version 1 (whole table): {first.manifest.files_copied} files, "
              f"{first.manifest.bytes_copied / 1e6:.1f} MB in {first.seconds:.2f} s")

        touched = change_files(writer, table_path, args.changed)
        daily = take_backup(HudiTable.load(str(table_path)), store)
        full = take_backup(HudiTable.load(str(table_path)), BackupStore(str(root / "full")))
        d, f = daily.manifest, full.manifest
        assert d.instant == f.instant and set(d.files) == set(f.files), "the two copies hold different tables"
        print(f"changed since version 1: {touched} of {data_files} data files ({args.changed:.0%})")
        print(f"daily backup (version 2): {d.files_copied} of {len(d.files)} files copied, "
              f"{d.bytes_copied / 1e6:.2f} MB in {daily.seconds:.2f} s")
        print(f"full copy:                {f.files_copied} of {len(f.files)} files copied, "
              f"{f.bytes_copied / 1e6:.2f} MB in {full.seconds:.2f} s")
        ratio = d.bytes_copied / f.bytes_copied
        print(f"daily / full: bytes {ratio:.4f}x (goal <= 0.05x), time {daily.seconds / full.seconds:.3f}x")


if __name__ == "__main__":
    main()
