"""A table's identity and the paths inside it, the same for every role.

A table is known by one spelling of its base path: `/data/t/`, `file:/data/t` and `file:///data/t/./` are all
`/data/t`, and a local path is resolved (symlinks followed), so one physical table has one identity however a
writer or an operator spells it; `s3://bucket/a/../t/` is `s3://bucket/t`. Plans and metadata name files
either relative to the table or absolutely (Java writes `file:/...`, `hdfs://...`, `s3a://...`); `join` and
`table_relative` convert between the two."""
from __future__ import annotations

import functools
import os
import posixpath
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from ..errors import HudiError

LOCAL_SCHEMES = ("", "file")
# Schemes that name the same store, as Hadoop's writers and TMS spell them; any other scheme is its own store.
_STORE_FAMILIES = ({"s3", "s3a", "s3n"}, {"abfs", "abfss", "az"}, {"gs", "gcs"})
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SHOWN_CHARS = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class PathOutsideTableError(HudiError):
    """A path that a plan, commit metadata or a caller names and that leads outside its table: through `..`, as
    an absolute path or URL elsewhere, with another scheme, with a NUL or control character, or (on a local
    filesystem) through a symbolic link. Nothing is read, written or deleted at such a path."""


def shown(path: str) -> str:
    """A path as an error message may echo it: control characters escaped, at most 200 characters."""
    text = path if len(path) <= _SHOWN_CHARS else path[:_SHOWN_CHARS] + "..."
    return repr(text)


def confined(rel: str, what: str = "path") -> str:
    """`rel`, a path relative to a table, checked to stay inside it: refused (PathOutsideTableError) if it is
    absolute, has a `..` segment, names a scheme, or holds a NUL or control character. The one check every path
    TMS acts on passes, whoever named it: every storage operation of a table applies it."""
    if _CONTROL.search(rel):
        raise PathOutsideTableError(f"{what} {shown(rel)} holds a control character")
    if rel.startswith("/") or _SCHEME.match(rel) or rel.startswith("file:"):
        raise PathOutsideTableError(f"{what} {shown(rel)} is not relative to the table")
    if ".." in rel.split("/"):
        raise PathOutsideTableError(f"{what} {shown(rel)} leads outside the table through '..'")
    return rel

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


def require_under_roots(base_path: str, roots: Iterable[str]) -> None:
    """Refuse (PathOutsideTableError) a table whose folder lies, as it resolves now, outside the storage roots:
    checked whenever TMS acts on a table, not only when it was registered, since a registered local folder can
    since have been replaced by a symbolic link to a folder elsewhere."""
    roots = list(roots)
    if roots and not is_under_roots(normalize_base_path(base_path), roots):
        raise PathOutsideTableError(f"the table at {base_path} resolves to {normalize_base_path(base_path)}, "
                                    "outside the storage roots")


def join(base_path: str, rel: str) -> str:
    """The absolute path of a table-relative path, as Hudi's plans and metadata record it."""
    base = base_path.rstrip("/")
    return f"{base}/{rel}" if rel else base


def _same_store(a: str, b: str) -> bool:
    """Schemes of one store differ in spelling (s3, s3a, s3n); '' is the local filesystem."""
    return a == b or any(a in family and b in family for family in _STORE_FAMILIES)


def _inside(base: tuple[str, str, str], path: tuple[str, str, str]) -> str | None:
    # The store, the bucket or host and the path decide.
    root = posixpath.normpath(base[2]).rstrip("/")
    target = posixpath.normpath(path[2])
    if not _same_store(base[0], path[0]) or base[1] != path[1]:
        return None
    if target.startswith(root + "/"):
        return target[len(root) + 1:]
    return None


@functools.lru_cache(maxsize=64)
def _local_root(base_path: str) -> str | None:
    """A local base path as `_inside` compares it (normalized, no trailing slash); None for a URL."""
    scheme, _, local = _split(base_path)
    return None if scheme else posixpath.normpath(local).rstrip("/")


def table_relative(base_path: str, path: str, partition: str = "") -> str:
    """`path` relative to the table: an absolute path or URL must lie inside the table (a local one may reach
    it through a symlink); a bare file name is in `partition`; any other relative path is relative to the base
    path already. Raises PathOutsideTableError for a path outside the table, or one that goes through `..`
    (even back into it), holds a NUL or control character, or names another store."""
    if _CONTROL.search(path) or ".." in path.split("/"):
        confined(path, "plan path")  # raises, naming what is wrong
    if (path.startswith("/") and "//" not in path and "/./" not in path and not path.endswith(("/", "/."))
            and path.strip() == path):
        # A local absolute path spelt as normpath spells it, under the base path as spelt: what the slow way
        # below finds, without parsing a URL (a plan names every file so).
        root = _local_root(base_path)
        if root is not None and path.startswith(root + "/"):
            return confined(path[len(root) + 1:], "plan path")
    scheme, netloc, local = _split(path)
    if not scheme and not local.startswith("/"):
        if "/" not in local:
            return confined(posixpath.join(partition, local) if partition else local, "plan path")
        return confined(posixpath.normpath(local), "plan path")
    base = _split(base_path)
    rel = _inside(base, (scheme, netloc, local))
    if rel is None and not scheme and not base[0]:
        rel = _inside(("", "", os.path.realpath(base[2])), ("", "", os.path.realpath(local)))
    if rel is None:
        raise PathOutsideTableError(f"plan path {shown(path)} is outside the table at {base_path}")
    return confined(rel, "plan path")
