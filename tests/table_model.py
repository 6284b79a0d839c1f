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
