"""Storage requests counted, for the benchmarks that judge by them: each call of LocalStorage's listing and
reading methods (the ones an object store answers with a request) adds one to REQUESTS, by method."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from tms.hudi.storage.table_storage import LocalStorage

COUNTED = ("listdir", "names", "read_bytes", "open", "exists", "info")
REQUESTS: Counter[str] = Counter()


def count_requests() -> None:
    """From now on, in this process, every counted call of LocalStorage adds to REQUESTS."""
    for name in COUNTED:
        method = getattr(LocalStorage, name)

        def counted(self: LocalStorage, *args: Any, _name: str = name, _method: Callable[..., Any] = method,
                    **kwargs: Any) -> Any:
            REQUESTS[_name] += 1
            return _method(self, *args, **kwargs)
        setattr(LocalStorage, name, counted)
