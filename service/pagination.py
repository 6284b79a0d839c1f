"""Keyset pagination of the list endpoints: a page ends with `next_cursor`, an opaque token naming the
last row given; passed back as `cursor`, the next page starts right after that row. Unlike an offset, a
cursor costs one index probe however deep the walk, and rows added or removed meanwhile neither repeat
nor skip the rows still to come (rows are listed by id, and ids are never reused).

A cursor is the list's name and the last row's id (`tables.117`), so the OpenAPI document says exactly which
cursors each list takes. The `offset` parameter keeps working; given with a cursor, it skips that many rows
after the cursor's. `total` is counted on the first page (and offset pages) only."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, TypeVar

from fastapi import Query

Row = TypeVar("Row")
# An id below 9 * 10**18 (bigint's ids end at 2**63 - 1, about 9.2 * 10**18).
_ID_PATTERN = r"(0|[1-9][0-9]{0,17}|[1-8][0-9]{18})"


def _cursor(listing: str) -> Any:
    return Query(pattern=rf"^{listing}\.{_ID_PATTERN}$", examples=[f"{listing}.117"],
                 description="The `next_cursor` of the previous page (`offset` then skips rows after it)")


TablesCursor = Annotated[str | None, _cursor("tables")]
TasksCursor = Annotated[str | None, _cursor("tasks")]
AlertsCursor = Annotated[str | None, _cursor("alerts")]


def encode_cursor(listing: str, last_id: int) -> str:
    return f"{listing}.{last_id}"


def decode_cursor(cursor: str | None) -> int | None:
    """The id a page starts after (None without a cursor), of a cursor its route's pattern admitted."""
    return None if cursor is None else int(cursor.rpartition(".")[2])


def page(listing: str, rows: Sequence[Row], limit: int, total: int, offset: int, cursor: str | None) -> dict[str, Any]:
    """The page body from up to `limit + 1` rows read (one more than shown tells whether more follow). The
    total is given on a list's first page (and on offset pages), not on the pages after a cursor: a count
    costs the whole list, a cursor page one index probe."""
    shown = list(rows[:limit])
    more = len(rows) > limit
    return {"items": shown, "total": None if cursor else total, "limit": limit, "offset": offset,
            "next_cursor": encode_cursor(listing, shown[-1].id) if more and shown else None}  # type: ignore[attr-defined]

