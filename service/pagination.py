"""Keyset pagination of the list endpoints: a page ends with `next_cursor`, an opaque token naming the
last row given; passed back as `cursor`, the next page starts right after that row. Unlike an offset, a
cursor costs one index probe however deep the walk, and rows added or removed meanwhile neither repeat
nor skip the rows still to come (rows are listed by id, and ids are never reused).

The existing `offset` parameter keeps working; a request gives one or the other. `total` is counted on
the first page (and offset pages) only."""
from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Annotated, Any, TypeVar

from fastapi import Query

from .errors import validation_error
from .schemas.common import MAX_ID

Cursor = Annotated[str | None, Query(max_length=200, pattern=r"^[A-Za-z0-9_-]*$",
                                     description="The `next_cursor` of the previous page (instead of `offset`)")]
Row = TypeVar("Row")


def encode_cursor(listing: str, last_id: int) -> str:
    raw = json.dumps({"l": listing, "id": last_id}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_cursor(listing: str, cursor: str | None, offset: int) -> int | None:
    """The id a page starts after (None without a cursor); a 422 for a cursor this listing did not give,
    or one given with an offset."""
    if cursor is None:
        return None
    if offset:
        raise _invalid("give either cursor or offset, not both")
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(data, dict) or data.get("l") != listing or type(data.get("id")) is not int \
                or not 0 <= data["id"] <= MAX_ID:
            raise ValueError
        return data["id"]
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise _invalid(f"not a cursor of this list ({listing}): pass a page's next_cursor back as it is") from None


def page(listing: str, rows: Sequence[Row], limit: int, total: int, offset: int, cursor: str | None) -> dict[str, Any]:
    """The page body from up to `limit + 1` rows read (one more than shown tells whether more follow). The
    total is given on a list's first page (and on offset pages), not on the pages after a cursor: a count
    costs the whole list, a cursor page one index probe."""
    shown = list(rows[:limit])
    more = len(rows) > limit
    return {"items": shown, "total": None if cursor else total, "limit": limit, "offset": offset,
            "next_cursor": encode_cursor(listing, shown[-1].id) if more and shown else None}  # type: ignore[attr-defined]


def _invalid(message: str):
    return validation_error([{"loc": ("cursor",), "type": "value_error", "msg": message}], "query")
