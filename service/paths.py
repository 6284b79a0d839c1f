"""Table base paths: one spelling per table (so callbacks find it however the writer wrote its
path), and the storage roots tables must live under."""
from __future__ import annotations

import posixpath
from urllib.parse import urlsplit


def normalize_base_path(raw: str) -> str:
    """`/data/t/`, `file:/data/t` and `file:///data/t/./` all become `/data/t`;
    `s3://bucket/a/../t/` becomes `s3://bucket/t`. ValueError for anything else."""
    value = raw.strip()
    parts = urlsplit(value)
    if parts.scheme in ("", "file"):
        path = parts.path if parts.scheme == "file" else value
        if not path.startswith("/"):
            raise ValueError("must be an absolute path or a URL such as s3://bucket/path")
        return "/" + posixpath.normpath(path).lstrip("/")
    if not parts.netloc:
        raise ValueError(f"URL {value!r} names no bucket or host")
    path = posixpath.normpath(parts.path) if parts.path else ""
    path = "" if path in ("/", ".") else path
    return f"{parts.scheme}://{parts.netloc}{path}"


def is_under_roots(base_path: str, roots: list[str]) -> bool:
    """True if the (normalized) path is one of the roots or inside one; no roots: anything goes."""
    if not roots:
        return True
    for root in roots:
        root = normalize_base_path(root).rstrip("/")
        if base_path == root or base_path.startswith(root + "/") or (root == "" and base_path.startswith("/")):
            return True
    return False
