"""A table's identity and the paths inside it, the same for every role.

A table is known by one spelling of its base path: `/data/t/`, `file:/data/t` and `file:///data/t/./` are all
`/data/t`, and a local path is resolved (symlinks followed), so one physical table has one identity however a
writer or an operator spells it; `s3://bucket/a/../t/` is `s3://bucket/t`. Plans and metadata name files
either relative to the table or absolutely (Java writes `file:/...`, `hdfs://...`, `s3a://...`); `join` and
`table_relative` convert between the two."""
from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from urllib.parse import urlsplit

from ..errors import HudiError

LOCAL_SCHEMES = ("", "file")
# The longest base path accepted, in characters: PATH_MAX of Linux, longer than any real table location. It bounds
# what normalizing a path may cost, whoever sent it.
MAX_BASE_PATH_CHARS = 4096


class InvalidBasePathError(ValueError):
    """A base path that names no table location (relative, or a URL without bucket or host)."""


def _split(raw: str) -> tuple[str, str, str]:
    """(scheme, netloc, path) of a path or URL; a local path has scheme ''."""
    value = raw.strip()
    parts = urlsplit(value)
    if parts.scheme in LOCAL_SCHEMES:
        return "", "", parts.path if parts.scheme == "file" else value
    return parts.scheme, parts.netloc, parts.path


def is_local(path: str) -> bool:
    return _split(path)[0] == ""


def normalize_base_path(raw: str, *, resolve: bool = True) -> str:
    """The one spelling of a table's base path. Local paths must be absolute and are resolved (symlinks
    followed) unless `resolve=False`. Raises InvalidBasePathError for anything else, and for a path longer than
    MAX_BASE_PATH_CHARS."""
    if len(raw) > MAX_BASE_PATH_CHARS:
        raise InvalidBasePathError(f"must be at most {MAX_BASE_PATH_CHARS} characters long")
    scheme, netloc, path = _split(raw)
    if not scheme:
        if not path.startswith("/"):
            raise InvalidBasePathError("must be an absolute path or a URL such as s3://bucket/path")
        path = "/" + posixpath.normpath(path).lstrip("/")
        return _resolved(path) if resolve else path
    if not netloc:
        raise InvalidBasePathError(f"URL {raw.strip()!r} names no bucket or host")
    path = posixpath.normpath(path) if path else ""
    path = "" if path in ("/", ".") else path
    return f"{scheme}://{netloc}{path}"


def _resolved(path: str) -> str:
    """os.path.realpath of a normalized absolute path, in as many look-ups as the folders that exist: realpath
    looks up every component, each in time growing with the path, while past the first component that does not
    exist none can be a symlink. The longest existing prefix is found by bisection (existence is monotone along
    a path)."""
    parts = path.split("/")
    exists, missing = 1, len(parts) + 1  # parts[:exists] exists ("" is the root); parts[:missing] does not
    while missing - exists > 1:
        middle = (exists + missing) // 2
        if os.path.lexists("/".join(parts[:middle]) or "/"):
            exists = middle
        else:
            missing = middle
    head = os.path.realpath("/".join(parts[:exists]) or "/")
    rest = "/".join(parts[exists:])
    return posixpath.join(head, rest) if rest else head


S3_SCHEMES = ("s3", "s3a", "s3n")


def spellings(base_path: str) -> list[str]:
    """A normalized base path and the other spellings of its location, itself first: on S3 a table registered
    as `s3://bucket/t` is written by Hadoop's writers as `s3a://bucket/t` (or `s3n://`), and they name it so in
    their callbacks; anywhere else it has one spelling."""
    scheme, _, rest = base_path.partition("://")
    if scheme not in S3_SCHEMES or not rest:
        return [base_path]
    return [base_path, *(f"{other}://{rest}" for other in S3_SCHEMES if other != scheme)]


def is_under_roots(base_path: str, roots: Iterable[str]) -> bool:
    """True if the normalized base path is one of the (normalized) roots or inside one; no roots: anything
    goes. A local path that leaves the roots through a symlink is outside them."""
    roots = list(roots)
    if not roots:
        return True
    for root in roots:
        root = normalize_base_path(root).rstrip("/")
        if base_path == root or base_path.startswith(root + "/") or (root == "" and base_path.startswith("/")):
            return True
    return False


def join(base_path: str, rel: str) -> str:
    """The absolute path of a table-relative path, as Hudi's plans and metadata record it."""
    base = base_path.rstrip("/")
    return f"{base}/{rel}" if rel else base


def _inside(base: tuple[str, str, str], path: tuple[str, str, str]) -> str | None:
    # Schemes of one store differ in spelling (s3, s3a, s3n): the bucket or host and the path decide.
    root = posixpath.normpath(base[2]).rstrip("/")
    target = posixpath.normpath(path[2])
    if bool(base[0]) != bool(path[0]) or base[1] != path[1]:
        return None
    if target.startswith(root + "/"):
        return target[len(root) + 1:]
    return None


def table_relative(base_path: str, path: str, partition: str = "") -> str:
    """`path` relative to the table: an absolute path or URL must lie inside the table (a local one may reach
    it through a symlink); a bare file name is in `partition`; any other relative path is relative to the base
    path already. Raises HudiError for a path outside the table."""
    scheme, netloc, local = _split(path)
    if not scheme and not local.startswith("/"):
        if "/" not in local:
            return posixpath.join(partition, local) if partition else local
        return posixpath.normpath(local)
    base = _split(base_path)
    rel = _inside(base, (scheme, netloc, local))
    if rel is None and not scheme and not base[0]:
        rel = _inside(("", "", os.path.realpath(base[2])), ("", "", os.path.realpath(local)))
    if rel is None:
        raise HudiError(f"plan path {path} is outside the table at {base_path}")
    return rel
