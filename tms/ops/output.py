"""What the ops commands print: human tables and records by default, JSON with `--json`."""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import typer

from tms import display

Cell = Callable[[dict[str, Any]], Any]
MAX_CELL = 60


def print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return display.yes_no(value)
    if isinstance(value, (list, tuple)):
        return ",".join(text(v) for v in value) or "-"
    if isinstance(value, dict):
        return ",".join(f"{k}={text(v)}" for k, v in value.items()) or "-"
    return " ".join(str(value).split())


def when(value: str | None) -> str:
    """An API timestamp as `YYYY-MM-DD HH:MM:SS UTC`, or `-`."""
    return display.moment(value)


def _clip(value: str, width: int = MAX_CELL) -> str:
    return value if len(value) <= width else value[:width - 1] + "…"


def table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, Cell]], *, empty: str = "nothing") -> str:
    """Rows as aligned columns under a header line; `empty` when there is no row."""
    if not rows:
        return f"({empty})"
    cells = [[_clip(text(cell(row))) for _, cell in columns] for row in rows]
    headers = [header for header, _ in columns]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


def record(pairs: Sequence[tuple[str, Any]]) -> str:
    """`name: value` lines, aligned."""
    width = max((len(name) for name, _ in pairs), default=0)
    return "\n".join(f"{(name + ':').ljust(width + 1)} {text(value)}" for name, value in pairs)


def field(name: str) -> Cell:
    return lambda row: row.get(name)


def time_field(name: str) -> Cell:
    return lambda row: when(row.get(name))
