"""The metadata table's own compaction (issue 37, item 3: the MDT keeps up as it grows, record index included): a
MOR trips table of `--rows` rows with an MDT (files, column_stats, record_index: a record-index entry per row),
the insert compacted into the MDT's base files, then `--deltas` small upserts (`--touched` rows each, half of
them new keys), each an MDT delta commit, with the MDT's compaction held off. Then, each in a process of its own
on a fresh copy, side by side in one run:

- TMS's compaction of the MDT (tms.hudi.metadata.compaction: the base file's records the log blocks did not touch
  copied as they are, the others merged);
- the same compaction decoding and re-encoding every record (the reference: what reading the slices whole and
  writing them again costs, as the first version of the compaction did);
- a reader of the MDT's record index (tms.hudi.metadata.reader: every record of the partition decoded), for scale.

Prints each one's time and peak resident memory (VmHWM, imports included), and the ratio TMS's compaction /
decoding every record (lower is better), and its time per record-index entry.

    .venv/bin/python bench/mdt_compaction.py                 # 1,000,000 rows
    .venv/bin/python bench/mdt_compaction.py --rows 200000   # a quick run
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).parent))
from trips_table import trips_records  # noqa: E402

from tms.hudi.metadata import compaction  # noqa: E402
from tms.hudi.metadata.init import create_metadata_table  # noqa: E402
from tms.hudi.metadata.reader import MetadataTable  # noqa: E402
from tms.hudi.metadata.records import encode_record  # noqa: E402
from tms.hudi.table.hudi_table import PROPERTIES, HudiTable  # noqa: E402
from tms.hudi.table.properties import format_properties  # noqa: E402
from tms.hudi.table.writer import HudiWriter  # noqa: E402
from tms.hudi.timeline.instant import Action  # noqa: E402

PARTITIONS = ["files", "column_stats", "record_index"]
HOLD_OFF = "hoodie.metadata.compact.max.delta.commits"


def _set_prop(table: HudiTable, key: str, value: str) -> None:
    table.config.props[key] = value
    table.storage.write_atomic(PROPERTIES, format_properties(table.config.props).encode(), overwrite=True)


def build(path: Path, rows: int, deltas: int, touched: int) -> None:
    rng = np.random.default_rng(7)
    records = trips_records(rows, rng)
    writer = HudiWriter.create_table(str(path), table_type="MERGE_ON_READ", version=8, key=["uuid"],
                                     ordering=["ts"], partition=["city"], schema=records.schema)
    create_metadata_table(writer.table, PARTITIONS)
    _set_prop(writer.table, HOLD_OFF, "1000000")   # the MDT's compaction held off while the table is built
    writer.write(records, "insert")
    table = HudiTable.load(str(path))   # the insert compacted into the MDT's base files: its steady state
    table.config.props[HOLD_OFF] = "1"
    assert compaction.compact_if_due(table, MetadataTable(table)) is not None
    for step in range(deltas):   # half updates, half new keys (new record-index entries)
        picked = np.sort(rng.choice(rows, touched // 2, replace=False))
        updates = records.take(pa.array(picked)).set_column(
            1, "ts", pa.array(np.full(len(picked), 10_000 + step), pa.int64()))
        new = trips_records(touched - len(picked), rng)
        new = new.set_column(0, "uuid", pa.array([f"new-{step:03d}-{i:06d}" for i in range(len(new))]))
        HudiWriter(HudiTable.load(str(path))).write(pa.concat_tables([updates, new.cast(updates.schema)]), "upsert")


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _decode_everything(mdt: MetadataTable, fs, schema: str) -> list[tuple[str, bytes]]:
    """The reference: every record of the slice read and written again."""
    return sorted((key, encode_record(rec, schema, blank_key=False))
                  for key, rec in mdt.slice_records(fs).items() if not rec.is_deleted)


def measure(kind: str, path: str) -> dict:
    data = HudiTable.load(path)
    data.config.props[HOLD_OFF] = "1"
    mdt = MetadataTable(data)
    if kind == "decode-everything":
        compaction._merged_entries = _decode_everything
    started = time.perf_counter()
    if kind == "read-record-index":
        entries = len(mdt.records("record_index"))
        seconds = time.perf_counter() - started
    else:
        instant = compaction.compact_if_due(data, mdt)
        seconds, peak = time.perf_counter() - started, _peak_mb()
        assert instant is not None, "no compaction was due"
        entries = len(MetadataTable(HudiTable.load(path)).records("record_index"))   # what it wrote reads back
        return {"seconds": seconds, "peak_mb": peak, "record_index": entries}
    return {"seconds": seconds, "peak_mb": _peak_mb(), "record_index": entries}


def _child(kind: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--measure", kind, str(path)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--deltas", type=int, default=10, help="upserts after the insert (MDT delta commits)")
    ap.add_argument("--touched", type=int, default=1000, help="rows each upsert updates")
    ap.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return 0
    root = Path(tempfile.mkdtemp(prefix="tms-bench-mdt-compaction-"))
    try:
        base = root / "t"
        started = time.perf_counter()
        build(base, args.rows, args.deltas, args.touched)
        mdt = MetadataTable(HudiTable.load(str(base)))
        logs = sum(len(fs.log_files) for p in PARTITIONS for fs in mdt.file_slices(p))
        print(f"table: {args.rows} rows, {args.deltas} upserts of {args.touched} rows; MDT "
              f"{len(mdt.table.timeline.completed((Action.DELTA_COMMIT,)))} delta commits, {logs} log files; built "
              f"in {time.perf_counter() - started:.1f} s", flush=True)
        figures = {}
        for kind in ("tms", "decode-everything", "read-record-index"):
            copy = root / kind
            shutil.copytree(base, copy)
            figures[kind] = r = _child(kind, copy)
            print(f"{kind:18s} {r['seconds']:8.2f} s  peak {r['peak_mb']:6.0f} MB  record index {r['record_index']}",
                  flush=True)
            shutil.rmtree(copy)
        tms, ref = figures["tms"], figures["decode-everything"]
        new_keys = args.deltas * (args.touched - args.touched // 2)
        assert tms["record_index"] == ref["record_index"] == args.rows + new_keys
        print(f"RATIO TMS's compaction / decoding every record: {tms['seconds'] / ref['seconds']:.2f} in time, "
              f"{tms['peak_mb'] / ref['peak_mb']:.2f} in peak memory; {tms['seconds'] / args.rows * 1e6:.2f} us per "
              "record-index entry")
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
