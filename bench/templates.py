"""Policy templates benchmark (issue 24): N registered tables (default 20,000, in 100 databases), then a
template put for one database and one for a path prefix covering every table: the time to resolve every
table's settings again (TableRepo.apply_templates, what PUT /api/v1/policy-templates/{name} runs) and how many
tables changed; then the same with nothing changed.

    python bench/templates.py [--tables 20000]

PostgreSQL: TMS_DATABASE_URL's server if set, else the local or a throwaway one (tms.db.testing), in a scratch
database dropped at the end. No storage is read."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tms.db import Database, TableRepo, TemplateRepo  # noqa: E402
from tms.db.testing import scratch_database  # noqa: E402

FACTS = {"table_type": "MERGE_ON_READ", "table_version": 8, "record_key_fields": ["id"], "partition_fields": [],
         "ordering_fields": ["ts"], "merge_mode": "EVENT_TIME_ORDERING", "properties": {}}


def _apply(db: Database) -> tuple[float, int]:
    started = time.perf_counter()
    with db.transaction() as session:
        changed = TableRepo(session).apply_templates()
    return time.perf_counter() - started, changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=20_000)
    args = parser.parse_args()
    with scratch_database() as url:
        db = Database(url)
        for at in range(0, args.tables, 5000):
            rows = [{**FACTS, "base_path": f"/lake/db{i % 100}/t{i}", "name": f"t{i}", "database": f"db{i % 100}"}
                    for i in range(at, min(args.tables, at + 5000))]
            with db.transaction() as session:
                TableRepo(session).register_many(rows)
        with db.transaction() as session:
            TemplateRepo(session).put("lake", path_prefix="/lake", policies={"hoodie.cleaner.commits.retained": 20},
                                      queue="bulk")
            TemplateRepo(session).put("db7", database="db7", policies={"hoodie.compact.inline.max.delta.commits": 2},
                                      priority=5)
        seconds, changed = _apply(db)
        print(f"{args.tables} tables, 2 templates put: re-resolved in {seconds:.2f} s, {changed} changed")
        seconds, changed = _apply(db)
        print(f"again, nothing changed: {seconds:.2f} s, {changed} changed")
        with db.transaction() as session:
            counts = TemplateRepo(session).table_counts()
        print(f"tables per template: {dict(sorted(counts.items()))}")
        db.dispose()


if __name__ == "__main__":
    main()
