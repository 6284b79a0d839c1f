"""Paths found in plans, as paths relative to the table's base path. Java writes compaction plans with file
names within the partition, and clustering, clean and rollback plans with absolute paths (`file:/...`,
`hdfs://...`, `s3a://...`); TMS's own planner may write either."""
from __future__ import annotations

import posixpath
import re

from tms.hudi.errors import HudiError
from tms.hudi.storage import Storage

_URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def table_relative(storage: Storage, path: str, partition: str = "") -> str:
    """`path` relative to the base path: an absolute path or URI must lie inside the table; a bare file
    name is in `partition`; any other relative path is relative to the base path already."""
    if _URI.match(path) or path.startswith("/"):
        stripped = storage.fs._strip_protocol(path).rstrip("/")
        root = storage.root.rstrip("/")
        if stripped.startswith(root + "/"):
            return stripped[len(root) + 1:]
        raise HudiError(f"plan path {path} is outside the table at {storage.base_uri}")
    if "/" not in path:
        return posixpath.join(partition, path) if partition else path
    return posixpath.normpath(path)


def absolute(storage: Storage, rel: str) -> str:
    """The absolute path Java writes into clean and rollback metadata for a table-relative path."""
    return storage.full(rel) if storage.is_local else f"{storage.base_uri}/{rel}"
