"""What the ops commands print: human tables and records by default, JSON with `--json`. A command asks
`output_for(as_json)` for its one output object and hands it what it has to say (an object, rows, a page of
rows); the object decides how it is printed, so no command branches on `--json`."""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
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


def table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, Cell]], *, empty: str = "nothing",
          whole: Sequence[str] = ()) -> str:
    """Rows as aligned columns under a header line; `empty` when there is no row. A cell longer than MAX_CELL
    is cut, except in the columns named in `whole`."""
    if not rows:
        return f"({empty})"
    cells = [[text(cell(row)) if header in whole else _clip(text(cell(row))) for header, cell in columns]
             for row in rows]
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


Text = str | Callable[[], str]  # what people read; a callable is only called when text is printed


class Output(ABC):
    """The one output of an ops command: people's text (TextOutput) or JSON for scripts (JsonOutput)."""

    @abstractmethod
    def show(self, data: Any, text: Text | None) -> None:
        """One result: `data` as JSON, or its `text` (None: nothing for people to read)."""

    @abstractmethod
    def note(self, line: str, *, err: bool = False) -> None:
        """A line for people only, such as progress as it happens (JSON has it in its result)."""

    @abstractmethod
    def rows(self, rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, Cell]], *, empty: str) -> None:
        """A list: a JSON array, or aligned columns (`empty` when there is no row)."""

    @abstractmethod
    def page(self, page: dict[str, Any], columns: Sequence[tuple[str, Cell]], *, empty: str) -> None:
        """A page of a listing (`items`, `total`): as JSON, or its rows and how many more there are."""


class TextOutput(Output):
    def show(self, data: Any, text: Text | None) -> None:
        if text is not None:
            typer.echo(text() if callable(text) else text)

    def note(self, line: str, *, err: bool = False) -> None:
        typer.echo(line, err=err)

    def rows(self, rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, Cell]], *, empty: str) -> None:
        typer.echo(table(rows, columns, empty=empty))

    def page(self, page: dict[str, Any], columns: Sequence[tuple[str, Cell]], *, empty: str) -> None:
        items = page["items"]
        self.rows(items, columns, empty=empty)
        if (page.get("total") or 0) > len(items):
            typer.echo(f"({len(items)} of {page['total']}; see --limit and --offset)")


class JsonOutput(Output):
    def show(self, data: Any, text: Text | None) -> None:
        print_json(data)

    def note(self, line: str, *, err: bool = False) -> None:
        pass

    def rows(self, rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, Cell]], *, empty: str) -> None:
        print_json(rows)

    def page(self, page: dict[str, Any], columns: Sequence[tuple[str, Cell]], *, empty: str) -> None:
        print_json(page)


def output_for(as_json: bool) -> Output:
    return JsonOutput() if as_json else TextOutput()
