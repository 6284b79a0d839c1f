"""Tables in every partition layout, made by the writer, with a model of their rows (shared by the layout
reading tests and the table-service tests on them)."""
from __future__ import annotations

from pathlib import Path

from tms.hudi.table.writer import create_table_for_records

HOUR_MS = 3_600_000
BASE_MS = 1_705_312_800_000  # 2024-01-15T10:00:00Z
# Values with characters URL encoding escapes ('/', ':', '=', '%', ' ' is kept), and one that nests folders.
CITIES = ["san francisco", "a/b", "x:y=z%"]

# layout -> (partition fields, writer options, the partition folders the records land in)
LAYOUTS = {
    "nonpartitioned": ([], {}, {""}),
    "hive_style": (["city"], {}, {"city=san francisco", "city=a/b", "city=x:y=z%"}),
    "plain_nested_value": (["city"], {"hive_style": False}, {"san francisco", "a/b", "x:y=z%"}),
    "urlencoded": (["city"], {"hive_style": False, "urlencode": True},
                   {"san francisco", "a%2Fb", "x%3Ay%3Dz%25"}),
    "hive_urlencoded": (["city"], {"urlencode": True}, {"city=san francisco", "city=a%2Fb", "city=x%3Ay%3Dz%25"}),
    "two_fields": (["city", "kind"], {"hive_style": False}, {f"{c}/{k}" for c in CITIES for k in ("even", "odd")}),
    "time_based_hourly": (["event_ms"], {"hive_style": False, "partition_time_format": "yyyy/MM/dd/HH"},
                          {"2024/01/15/10", "2024/01/15/11", "2024/01/15/12"}),
    "time_based_hive": (["event_ms"], {"partition_time_format": "yyyy/MM/dd"}, {"event_ms=2024/01/15"}),
}


def make_record(i: int, ts: int) -> dict:
    """Record `i` at version `ts`; its partition values never change."""
    return {"id": i, "ts": ts, "name": f"n{i}-{ts}", "city": CITIES[i % 3], "kind": "odd" if i % 2 else "even",
            "event_ms": BASE_MS + (i % 3) * HOUR_MS}


class Model:
    def __init__(self):
        self.rows: dict[int, dict] = {}

    def upsert(self, recs: list[dict]) -> None:
        for r in recs:
            if r["id"] not in self.rows or r["ts"] >= self.rows[r["id"]]["ts"]:
                self.rows[r["id"]] = r

    def delete(self, ids: list[int]) -> None:
        for i in ids:
            self.rows.pop(i, None)

    def expected(self) -> list[dict]:
        return sorted(({"_hoodie_record_key": str(r["id"]), **r} for r in self.rows.values()),
                      key=lambda r: (r["_hoodie_record_key"], repr(sorted(r.items()))))


def write_table(path: Path, layout: str, table_type: str, version: int, **extra) -> Model:
    fields, options, _ = LAYOUTS[layout]
    writer = create_table_for_records(str(path), [make_record(0, 0)], table_type=table_type, version=version,
                                      key=["id"],
                                      ordering=["ts"], partition=fields, **options, **extra)
    model = Model()
    inserts = [make_record(i, 1) for i in range(12)]
    writer.write(inserts, "insert")
    model.upsert(inserts)
    updates = [make_record(i, 2) for i in range(0, 12, 2)] + [make_record(1, 0)]  # record 1 at an older ts loses
    writer.write(updates)
    model.upsert(updates)
    writer.write([make_record(i, 3) for i in (3, 4)], "delete")
    model.delete([3, 4])
    return model


MODEL_COLUMNS = ["_hoodie_record_key", "id", "ts", "name", "city", "kind", "event_ms"]
