"""Comparing two executions of one plan: the rows the completed instant wrote on each table, per file group
for a compaction (it keeps each file group's id) and per partition for a clustering (each execution names its
new file groups afresh). Each group's record keys, row count and a hash of its rows (every column but
`_hoodie_file_name`, which names the writer's own file) are compared, and the first record key whose row
differs is named."""
from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import Action

from .base_files import read_base_file
from .errors import ExecutionError

KEY = "_hoodie_record_key"
FILE_NAME = "_hoodie_file_name"


@dataclass(frozen=True)
class GroupDigest:
    rows: int
    keys: int
    hash: str

    def as_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "keys": self.keys, "hash": self.hash}


@dataclass(frozen=True)
class Comparison:
    groups: list[dict[str, Any]] = field(default_factory=list)  # per group: its name and each side's digest
    first_differing_key: str | None = None
    detail: str | None = None  # where they first differ, in one line

    @property
    def agreed(self) -> bool:
        return self.detail is None


def _written_rows(table: HudiTable, instant: str) -> tuple[str, dict[str, list[pa.Table]]]:
    """How the instant's writes are grouped ("file group" or "partition"), and each group's rows."""
    table.timeline.reload(force=True)
    completed = next((i for i in table.timeline.completed() if i.timestamp == instant), None)
    if completed is None:
        raise ExecutionError(f"{instant} is not completed on {table.base_path}")
    by_partition = completed.action != Action.COMMIT  # a compaction completes as a commit
    kind = "partition" if by_partition else "file group"
    groups: dict[str, list[pa.Table]] = defaultdict(list)
    for partition, stats in table.timeline.commit_metadata(completed).partition_to_write_stats.items():
        for stat in stats:
            if stat.path:
                name = partition if by_partition else f"{partition}/{stat.file_id}"
                groups[name].append(read_base_file(table.storage, stat.path))
    return kind, groups


def _rows_by_key(parts: list[pa.Table]) -> dict[str, tuple[Any, ...]]:
    rows: dict[str, tuple[Any, ...]] = {}
    for part in parts:
        columns = sorted(n for n in part.column_names if n != FILE_NAME)
        for row in part.select(columns).to_pylist():
            rows[str(row[KEY])] = tuple((name, row[name]) for name in columns)
    return rows


def _digest(rows: dict[str, tuple[Any, ...]], count: int) -> GroupDigest:
    digest = hashlib.sha256()
    for key in sorted(rows):
        digest.update(repr(rows[key]).encode())
    return GroupDigest(rows=count, keys=len(rows), hash=digest.hexdigest())


def compare_instant(stable: HudiTable, shadow: HudiTable, instant: str) -> Comparison:
    """Compare what `instant` wrote on `stable` with what it wrote on `shadow`, group by group."""
    kind, ours = _written_rows(stable, instant)
    _, theirs = _written_rows(shadow, instant)
    groups: list[dict[str, Any]] = []
    first_key: str | None = None
    detail: str | None = None
    for name in sorted(set(ours) | set(theirs)):
        a_parts, b_parts = ours.get(name, []), theirs.get(name, [])
        a, b = _rows_by_key(a_parts), _rows_by_key(b_parts)
        a_digest = _digest(a, sum(p.num_rows for p in a_parts))
        b_digest = _digest(b, sum(p.num_rows for p in b_parts))
        groups.append({"group": name, "stable": a_digest.as_dict(), "shadow": b_digest.as_dict()})
        if detail is not None or a_digest == b_digest:
            continue
        differing = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        first_key = differing[0] if differing else None
        if first_key is None:
            detail = (f"{kind} {name}: {a_digest.rows} row(s) on stable, {b_digest.rows} in shadow "
                      "(a record key written twice)")
        elif first_key not in b:
            detail = f"{kind} {name}: record key {first_key} is missing in shadow"
        elif first_key not in a:
            detail = f"{kind} {name}: record key {first_key} is only in shadow"
        else:
            column = next((col for (col, value), pair in zip(a[first_key], b[first_key], strict=False)
                           if (col, value) != pair), "its columns")
            detail = f"{kind} {name}: record key {first_key} differs in {column}"
    return Comparison(groups=groups, first_differing_key=first_key, detail=detail)
