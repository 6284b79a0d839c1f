"""Discovery benchmark (issue 24): scan a storage root of N Hudi tables (default 10,000, in 100 databases'
folders of 100 tables each), then scan it again with nothing changed but one new table: time and storage
requests of the first scan and of the rescan, and the ratio rescan / first scan (goal: <= 0.1 in requests).

    python bench/discovery.py [--tables 10000]

A template MERGE_ON_READ table (table version 8, written by TMS's writer: one insert) is copied per table.
Storage requests are the storage layer's calls (a listing, a read, an existence or size check: each one
request on an object store), counted by wrapping the local backend's methods for the run. PostgreSQL:
TMS_DATABASE_URL's server if set, else the local or a throwaway one (tms.db.testing), in a scratch database
dropped at the end."""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from storage_requests import REQUESTS, count_requests  # noqa: E402

from tms.db import Database  # noqa: E402
from tms.db.testing import scratch_database  # noqa: E402
from tms.fleet.onboarding import scan_root  # noqa: E402
from tms.hudi.table.writer import create_table_for_records  # noqa: E402


def _make_root(root: Path, tables: int) -> Path:
    template = root.parent / "template"
    rows = [{"id": i, "ts": i, "v": f"r{i}"} for i in range(10)]
    create_table_for_records(str(template), rows, table_type="MERGE_ON_READ", version=8, key=["id"],
                             ordering=["ts"], partition=[]).write(rows, "insert")
    for n in range(tables):
        shutil.copytree(template, root / f"db{n // 100:03d}" / f"t{n:05d}")
    return template


def _scan(database: Database, root: Path) -> tuple[float, int, Any]:
    REQUESTS.clear()
    start = time.perf_counter()
    report = scan_root(database, str(root))
    return time.perf_counter() - start, sum(REQUESTS.values()), report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=10_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tms-bench-discovery-") as tmp, scratch_database() as url:
        root = Path(tmp) / "lake"
        t0 = time.perf_counter()
        template = _make_root(root, args.tables)
        print(f"made {args.tables} tables in {time.perf_counter() - t0:.1f} s")
        database = Database(url)
        count_requests()
        first_s, first_req, first = _scan(database, root)
        shutil.copytree(template, root / "db000" / "new_table")
        re_s, re_req, again = _scan(database, root)
        database.dispose()
    assert len(first.registered) == args.tables and first.refused == [], (len(first.registered), first.refused)
    assert [r["base_path"].rsplit("/", 1)[-1] for r in again.registered] == ["new_table"]
    print(f"{'scan':<10} {'tables':>8} {'registered':>10} {'seconds':>9} {'requests':>9} {'listings':>9}")
    print(f"{'first':<10} {args.tables:>8} {len(first.registered):>10} {first_s:>9.2f} {first_req:>9} "
          f"{first.listings:>9}")
    print(f"{'rescan':<10} {args.tables + 1:>8} {len(again.registered):>10} {re_s:>9.2f} {re_req:>9} "
          f"{again.listings:>9}")
    print(f"ratio rescan / first scan: requests {re_req / first_req:.3f} (goal <= 0.1), time {re_s / first_s:.3f}")


if __name__ == "__main__":
    main()
