"""A plain in-memory model of a Hudi table's rows under the writer's operations: what a reader must see."""
from __future__ import annotations

import copy


class TableModel:
    def __init__(self, key: str, partition: str | None, ordering: str | None, event_time: bool):
        self.key, self.partition, self.ordering, self.event_time = key, partition, ordering, event_time
        self.rows: dict[tuple, dict] = {}
        self.history: dict[str, dict[tuple, dict]] = {}  # instant -> rows after it

    def _id(self, rec: dict) -> tuple:
        return (rec.get(self.partition) if self.partition else None, rec[self.key])

    def _wins(self, new: dict, old: dict) -> bool:
        if not self.event_time:
            return True
        return new[self.ordering] >= old[self.ordering]

    def _dedupe(self, records: list[dict]) -> list[dict]:
        out: dict[tuple, dict] = {}
        for rec in records:
            cur = out.get(self._id(rec))
            if cur is None or self._wins(rec, cur):
                out[self._id(rec)] = rec
        return list(out.values())

    def upsert(self, records: list[dict]) -> None:
        for rec in self._dedupe(records):
            cur = self.rows.get(self._id(rec))
            if cur is None or self._wins(rec, cur):
                self.rows[self._id(rec)] = dict(rec)

    def delete(self, records: list[dict]) -> None:
        for rec in records:
            cur = self.rows.get(self._id(rec))
            if cur is None:
                continue
            if self.ordering and self.event_time and rec.get(self.ordering) is not None \
                    and rec[self.ordering] < cur[self.ordering]:
                continue
            del self.rows[self._id(rec)]

    def commit(self, instant: str) -> None:
        self.history[instant] = copy.deepcopy(self.rows)

    def expected(self, as_of: str | None = None) -> list[dict]:
        """Rows as `support.rows(table, columns)` gives them: record key first, then the data fields."""
        state = self.rows if as_of is None else self.history[as_of]
        out = [{"_hoodie_record_key": str(r[self.key]), **r} for r in state.values()]
        return sorted(out, key=lambda r: (r["_hoodie_record_key"], repr(sorted(r.items()))))


# --- a table written by the writer, with the model of its rows -------------------------------------------

CITIES = ["sf", "nyc", "sp"]
COLUMNS = ["_hoodie_record_key", "id", "name", "ts", "city"]


def rec(i: int, ts: int, name: str | None = None) -> dict:
    return {"id": i, "name": name or f"n{i}-{ts}", "ts": ts, "city": CITIES[i % 3]}


def key(i: int) -> dict:
    return {"id": i, "city": CITIES[i % 3]}


class ModelledTable:
    """A table (key `id`, ordering `ts`, partitioned by `city` unless told not) written by the writer, with
    the model of its rows. Writes left inflight join the model when completed, never if forgotten."""

    def __init__(self, path, table_type: str = "MERGE_ON_READ", version: int = 6, partitioned: bool = True,
                 **writer_options):
        from tms.hudi.table.writer import create_table_for_records
        self.path = path
        self.writer = create_table_for_records(str(path), [rec(0, 0)], table_type=table_type, version=version,
                                               key=["id"], ordering=["ts"],
                                               partition=["city"] if partitioned else [], **writer_options)
        self.model = TableModel("id", "city" if partitioned else None, "ts", event_time=True)
        self.pending: dict[str, tuple[list[dict], str]] = {}

    def write(self, records: list[dict], op: str = "upsert", *, leave_inflight: bool = False) -> str:
        """One commit; returns its instant."""
        result = self.writer.write(records, op, leave_inflight=leave_inflight)
        if leave_inflight:
            self.pending[result.instant] = (records, op)
        else:
            self._apply(records, op)
        return result.instant

    def complete(self, instant: str) -> None:
        self.writer.complete(instant)
        self._apply(*self.pending.pop(instant))

    def forget(self, instant: str) -> None:
        """A pending write that is rolled back: its rows never show."""
        self.pending.pop(instant)

    def _apply(self, records: list[dict], op: str) -> None:
        (self.model.delete if op == "delete" else self.model.upsert)(records)

    def table(self):
        from tms.hudi.table.hudi_table import HudiTable
        return HudiTable.load(str(self.path), context=self.writer.table.context)

    def check(self, *, hudi_rs: bool = True) -> None:
        """The library's reader (and hudi-rs) read exactly the model's rows."""
        from support import hudi_rs_table, rows

        from tms.hudi.records.reader import read_snapshot
        expected = self.model.expected()
        assert rows(read_snapshot(self.table()), COLUMNS) == expected
        if hudi_rs:
            assert rows(hudi_rs_table(self.path), COLUMNS) == expected
