"""Storage access for one table, addressed by paths relative to its base path, with the two guarantees the
timeline needs: a written file appears whole or not at all, and a create never replaces an existing file.

`Storage` is the protocol every caller uses; `open_storage` picks the backend by the base path's URL scheme:
`LocalStorage` for local paths (and `file:` URLs) works on the operating system's files directly (atomic
exclusive create by hard link, and a local folder's changes can be watched by the kernel); `FsspecStorage`
reaches object stores and HDFS through fsspec (`s3://`, `gs://`, `abfs://`, `hdfs://`, `memory://`, ...).

What only some stores can do is asked of every store by what it is for, never by testing for a local path: a
folder's change stamp (`change_stamp`) and change feed (`change_feed`), where the store keeps them, a listing
that starts after a name (`names_after`, S3's `start-after`), and a local file for writers and readers that
take only paths (`local_copy`, `create_from_local`), in place or copied.

On S3 and Azure Blob storage a create-once file (an instant file, a new data or log file) is one conditional
request with `If-None-Match: *` (S3: the PUT, or the completion of a multipart upload; Azure: the Put Blob, or
the Put Block List that commits a streamed upload): of two writers exactly one wins, the other gets
InstantConflictError. On GCS (no conditional create proven against an endpoint yet) a create-once file is
refused with UnsupportedStorageError, before anything is written, rather than checked for and then put.
Object stores cannot append: `appends` is False there, and a writer starts a new log file version where it
would have appended a block."""
from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import posixpath
import shutil
import stat
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import fsspec
import fsspec.asyn
import pyarrow.fs as pafs

from ..errors import HudiError, InstantConflictError, StorageUnavailableError, UnsupportedStorageError
from .paths import PathOutsideTableError, confined, shown

if TYPE_CHECKING:
    from ..timeline.watch import FolderChanges, TimelineWatcher

TEMP_PREFIX = ".tms-tmp-"


def is_hadoop_checksum(name: str) -> bool:
    """Hadoop's local filesystem writes `.<file>.crc` beside every file a Java writer writes, and hides it
    from every listing; Hudi never sees it. TMS must not either: `..<fileId>_<instant>.log.1_0-1-2.crc` parses
    as a log file of a file group `.<fileId>` that does not exist."""
    return name.startswith(".") and name.endswith(".crc")


@dataclass(frozen=True)
class FileInfo:
    name: str       # base name
    path: str       # path relative to the table's base path
    size: int
    mtime: float | None
    is_dir: bool


@runtime_checkable
class Storage(Protocol):
    """Files of one table, addressed by paths relative to its base path."""

    base_uri: str   # the base path as given (no trailing slash)
    appends: bool   # `append` adds to an existing file (False on object stores: an object is written once)

    def full(self, rel: str) -> str:
        """The backend's own path of `rel` (what `open` and the Arrow filesystem take)."""
        ...

    def uri(self, rel: str) -> str:
        """The absolute path or URL of `rel`, as Hudi records files in plans and metadata."""
        ...

    def change_stamp(self, rel: str) -> int | None:
        """A stamp of the folder `rel` that moves whenever a file is created in it, renamed into it or removed
        from it (a local folder's modification time, in nanoseconds); None where the store keeps none (an
        object store has no folders) or the folder cannot be read."""
        ...

    def change_feed(self, rel: str, watcher: TimelineWatcher) -> FolderChanges | None:
        """The changes of the folder `rel` as the kernel reports them, through `watcher`; None where there is
        no such feed (not a local filesystem, or the folder cannot be watched): the caller lists it instead."""
        ...

    def local_copy(self, rel: str) -> AbstractContextManager[str]:
        """An operating system path holding the bytes of `rel`, for readers that take only a path: the file
        itself on a local filesystem, else a temporary copy, removed when the context ends."""
        ...

    def create_from_local(self, rel: str, write: Callable[[str], None]) -> None:
        """A new file `rel` (refused if it exists, as `open_new`) written by `write(path)`, a writer that takes
        only an operating system path: in place on a local filesystem, else into a temporary file uploaded."""
        ...

    def arrow_filesystem(self) -> pafs.FileSystem:
        """The filesystem pyarrow reads `full()` paths with."""
        ...

    def exists(self, rel: str) -> bool: ...
    def read_bytes(self, rel: str) -> bytes: ...
    def open(self, rel: str, mode: str = "rb") -> IO[bytes]: ...

    def listdir(self, rel: str) -> list[FileInfo]:
        """Entries of a folder (none if it does not exist), temp files of unfinished writes excluded."""
        ...

    def names(self, rel: str) -> list[str]:
        """Just the names in a folder, as the store lists them (temp files of unfinished writes included: the
        caller skips names it cannot parse): the cheap listing the timeline reload uses."""
        ...

    def names_after(self, rel: str, start_after: str) -> list[str] | None:
        """The names in a folder that sort after `start_after` (exclusive, by code point: S3's order), as
        `names` lists them; None where the store cannot list from a name (the caller lists the whole folder).
        What a long-lived reader of a timeline lists instead of the whole folder (see timeline.tail_listing)."""
        ...

    def info(self, rel: str) -> FileInfo: ...
    def makedirs(self, rel: str) -> None: ...

    def require_inside(self, rels: Iterable[str]) -> None:
        """Refuse (PathOutsideTableError) if any of `rels` leads outside the table, as `full` would refuse it:
        the check of many paths at once (a plan's), each folder resolved once."""
        ...

    def write_atomic(self, rel: str, data: bytes, *, overwrite: bool = False) -> None:
        """Write `data` so readers see the whole file or nothing. Without `overwrite`, raise
        InstantConflictError if the file exists (and leave it untouched)."""
        ...

    def write_new(self, rel: str, data: bytes) -> None:
        """A new data file (base or log file): exclusive create, not atomic (markers cover it)."""
        ...

    def open_new(self, rel: str) -> IO[bytes]:
        """A new data file opened for a streamed write, refused if it exists."""
        ...

    def append(self, rel: str, data: bytes) -> None:
        """Append to a log file (v6 appends blocks to the slice's current log file); only where `appends`."""
        ...

    def touch(self, rel: str) -> None: ...
    def delete(self, rel: str, *, missing_ok: bool = True) -> bool: ...
    def delete_tree(self, rel: str) -> None: ...

    def delete_many(self, rels: list[str]) -> list[str]:
        """Delete files in as few requests as the store allows (S3: DeleteObjects, 1,000 keys a request);
        returns those the store reports deleted (a local filesystem: those that existed; S3 reports a missing
        key deleted, as its single delete does)."""
        ...

    def read_versioned(self, rel: str) -> tuple[bytes, str] | None:
        """A small file that is changed in place (a lock file) and its version (S3 and Azure: its ETag), in
        one read; None if there is none."""
        ...

    def replace_if(self, rel: str, data: bytes, version: str | None) -> str | None:
        """Write `data` to `rel` only if the file is still at `version` (still absent if None): one
        conditional request on S3 and Azure (If-Match / If-None-Match). The new version, or None if the file
        changed meanwhile (another writer won). Refused (UnsupportedStorageError) where the store has none."""
        ...


def open_storage(base_path: str, storage_options: dict[str, Any] | None = None) -> Storage:
    """The backend for a base path, chosen by its URL scheme, reached with `storage_options` (fsspec's; None:
    the backend's defaults, which read the store's usual environment variables). Callers that hold options per
    store pass a `HudiContext` instead (`HudiContext.open_storage`)."""
    protocol = fsspec.utils.get_protocol(base_path)
    if protocol in ("file", "local") and not storage_options:
        return LocalStorage(base_path)
    return FsspecStorage(base_path, storage_options)


def walk_files(storage: Storage, rel: str = "", skip: Callable[[str], bool] = lambda path: False
               ) -> Iterator[FileInfo]:
    """Every file under `rel`; folders for which `skip` is true are not entered."""
    stack = [rel]
    while stack:
        folder = stack.pop()
        for info in storage.listdir(folder):
            if info.is_dir:
                if not skip(info.path):
                    stack.append(info.path)
            else:
                yield info


def has_conditional_writes(uri: str) -> bool:
    """Whether `Storage.replace_if` works on the store of `uri`: a local filesystem, S3 or Azure Blob storage."""
    protocol = fsspec.utils.get_protocol(uri)
    return protocol in ("file", "local") or protocol in CONDITIONAL_CREATE_PROTOCOLS


def _join(root: str, rel: str) -> str:
    """The backend's path of a table-relative path, which must stay inside the table (`confined`)."""
    return posixpath.join(root, confined(rel)) if rel else root


class LocalStorage:
    """A table on a local (or locally mounted) filesystem. Every path is resolved when it is used, symbolic
    links followed, and refused if it leads outside the table as the table's folder resolved when the storage
    was opened: a link inside the table, or the table's folder replaced by one, never takes a read, a write or
    a delete elsewhere."""

    appends = True

    def __init__(self, base_path: str):
        self.base_uri = base_path.rstrip("/")
        path = self.base_uri
        for prefix in ("file://", "file:"):
            if path.startswith(prefix):
                path = path[len(prefix):]
                break
        if path and not path.startswith("/"):  # a relative path: from the working directory, as anywhere
            path = os.path.abspath(path)
        self.root = "/" + path.lstrip("/") if path else "/"
        self._real_root = os.path.realpath(self.root)

    def full(self, rel: str) -> str:
        return self._resolved(rel)[0]

    def _resolved(self, rel: str) -> tuple[str, str]:
        """(path, real path) of `rel`, refused if the real path (symbolic links followed) leaves the table."""
        path = _join(self.root, rel)
        real = os.path.realpath(path)
        if real != self._real_root and not real.startswith(self._real_root.rstrip("/") + "/"):
            raise PathOutsideTableError(f"{shown(rel or '.')} of the table at {self.base_uri} resolves to "
                                        f"{shown(real)}, outside the table, through a symbolic link")
        return path, real

    def require_inside(self, rels: Iterable[str]) -> None:
        # A file that is not itself a symbolic link resolves to its folder's real path and its name: the folder
        # is resolved once (realpath looks up every component of the path), each file is one lstat.
        real_folders: dict[str, str] = {}
        for rel in rels:
            folder, name = posixpath.split(confined(rel))
            if name in ("", "."):
                self.full(rel)
                continue
            real = real_folders.get(folder)
            if real is None:
                real = real_folders[folder] = self._resolved(folder)[1]
            try:
                is_link = stat.S_ISLNK(os.lstat(posixpath.join(real, name)).st_mode)
            except OSError:
                is_link = False  # nothing there (or no folder): it resolves to that path, inside
            if is_link:
                self.full(rel)

    def uri(self, rel: str) -> str:
        return self.full(rel)

    def change_stamp(self, rel: str) -> int | None:
        try:
            return os.stat(self.full(rel)).st_mtime_ns
        except OSError:
            return None

    def change_feed(self, rel: str, watcher: TimelineWatcher) -> FolderChanges | None:
        return watcher.watch(self.full(rel))

    @contextmanager
    def local_copy(self, rel: str) -> Iterator[str]:
        yield self.full(rel)

    def create_from_local(self, rel: str, write: Callable[[str], None]) -> None:
        self.open_new(rel).close()  # exclusive create: an attempt never overwrites another's file
        write(self.full(rel))

    def arrow_filesystem(self) -> pafs.FileSystem:
        return pafs.LocalFileSystem()

    def exists(self, rel: str) -> bool:
        return os.path.exists(self.full(rel))

    def read_bytes(self, rel: str) -> bytes:
        with open(self.full(rel), "rb") as fh:
            return fh.read()

    def open(self, rel: str, mode: str = "rb") -> IO[bytes]:
        return open(self.full(rel), mode)  # noqa: SIM115 (the caller closes it)

    def listdir(self, rel: str) -> list[FileInfo]:
        out = []
        try:
            with os.scandir(self.full(rel)) as it:
                for e in it:
                    if e.name.startswith(TEMP_PREFIX) or is_hadoop_checksum(e.name):
                        continue
                    is_dir = e.is_dir()
                    st = None if is_dir else e.stat()
                    out.append(FileInfo(e.name, posixpath.join(rel, e.name), st.st_size if st else 0,
                                        st.st_mtime if st else None, is_dir))
        except FileNotFoundError:
            return []
        return out

    def names(self, rel: str) -> list[str]:
        try:
            return os.listdir(self.full(rel))
        except FileNotFoundError:
            return []

    def names_after(self, rel: str, start_after: str) -> list[str] | None:
        # The kernel lists the whole folder anyway (no request is saved); same answer as on S3.
        return [n for n in LocalStorage.names(self, rel) if n > start_after]

    def info(self, rel: str) -> FileInfo:
        st = os.stat(self.full(rel))
        return FileInfo(posixpath.basename(rel), rel, st.st_size, st.st_mtime, os.path.isdir(self.full(rel)))

    def makedirs(self, rel: str) -> None:
        os.makedirs(self.full(rel), exist_ok=True)

    def write_atomic(self, rel: str, data: bytes, *, overwrite: bool = False) -> None:
        target = self.full(rel)
        parent = posixpath.dirname(target)
        os.makedirs(parent, exist_ok=True)
        tmp = posixpath.join(parent, f"{TEMP_PREFIX}{uuid.uuid4().hex}")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            if overwrite:
                self._drop_checksum(rel)
                os.replace(tmp, target)
            else:
                try:
                    os.link(tmp, target)  # atomic create-if-absent
                except FileExistsError:
                    raise InstantConflictError(f"{rel} already exists") from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def write_new(self, rel: str, data: bytes) -> None:
        with self.open_new(rel) as fh:
            fh.write(data)

    def open_new(self, rel: str) -> IO[bytes]:
        target = self.full(rel)
        os.makedirs(posixpath.dirname(target), exist_ok=True)
        try:
            return open(target, "xb")  # noqa: SIM115 (the caller closes it)
        except FileExistsError:
            raise InstantConflictError(f"{rel} already exists") from None

    def append(self, rel: str, data: bytes) -> None:
        self._drop_checksum(rel)
        with open(self.full(rel), "ab") as fh:
            fh.write(data)

    def _drop_checksum(self, rel: str) -> None:
        """Remove the Hadoop checksum a Java writer left beside `rel`: once TMS changes or removes the file it
        would be stale, and Hadoop's local filesystem fails a read it cannot verify (without one, it reads
        unchecked)."""
        parent, name = posixpath.split(self.full(rel))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(posixpath.join(parent, f".{name}.crc"))

    def read_versioned(self, rel: str) -> tuple[bytes, str] | None:
        try:
            with open(self.full(rel), "rb") as fh:
                return self._versioned(fh)
        except FileNotFoundError:
            return None

    @staticmethod
    def _versioned(fh: IO[bytes]) -> tuple[bytes, str]:
        raw = fh.read()
        return raw, f"{os.fstat(fh.fileno()).st_ino}-{hashlib.sha256(raw).hexdigest()}"

    def replace_if(self, rel: str, data: bytes, version: str | None) -> str | None:
        # A version is the file's inode and content digest; a write replaces the file (a new inode) while
        # holding an exclusive flock on the version it read, so two writers from one version cannot both
        # succeed; a create is a hard link, which fails if the file exists.
        target = self.full(rel)
        folder = os.path.dirname(target)
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f"{TEMP_PREFIX}{os.path.basename(target)}.{uuid.uuid4().hex}")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            if version is None:
                try:
                    os.link(tmp, target)
                except FileExistsError:
                    return None
            else:
                try:
                    current = open(target, "rb")  # noqa: SIM115 (closed below, after its lock)
                except FileNotFoundError:
                    return None
                with current:
                    fcntl.flock(current.fileno(), fcntl.LOCK_EX)
                    try:
                        if os.stat(target).st_ino != os.fstat(current.fileno()).st_ino:
                            return None  # replaced while we waited
                        if self._versioned(current)[1] != version:
                            return None
                        os.replace(tmp, target)
                    except FileNotFoundError:
                        return None
                    finally:
                        fcntl.flock(current.fileno(), fcntl.LOCK_UN)
            return f"{os.stat(target).st_ino}-{hashlib.sha256(data).hexdigest()}"
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def touch(self, rel: str) -> None:
        target = self.full(rel)
        os.makedirs(posixpath.dirname(target), exist_ok=True)
        with open(target, "a"):
            pass
        os.utime(target, None)

    def delete(self, rel: str, *, missing_ok: bool = True) -> bool:
        self._drop_checksum(rel)
        try:
            os.unlink(self.full(rel))
            return True
        except FileNotFoundError:
            if missing_ok:
                return False
            raise

    def delete_many(self, rels: list[str]) -> list[str]:
        # Each folder is resolved and opened once, component by component from the table's real folder without
        # following a link (a folder swapped for a link meanwhile is not entered); its files are unlinked by name
        # in that open folder, where no link can take an unlink elsewhere. A file that is itself a symbolic link
        # is checked as `full` checks it, as is anything this cannot open: the whole batch is checked before
        # any of it is deleted (a refused batch deletes nothing).
        folders: dict[str, int | None] = {}
        try:
            placed: list[tuple[str, int | None, str]] = []
            for rel in rels:
                folder, name = posixpath.split(confined(rel))
                if name in ("", "."):
                    fd = None
                elif folder in folders:
                    fd = folders[folder]
                else:
                    fd = folders[folder] = self._open_folder(folder)
                if fd is None:
                    self.full(rel)
                elif self._is_link(fd, name):
                    self.full(rel)  # refused if it leads outside; else the link itself is what is removed
                placed.append((rel, fd, name))
            return [rel for rel, fd, name in placed
                    if (self.delete(rel) if fd is None else self._delete_in(fd, name))]
        finally:
            for fd in folders.values():
                if fd is not None:
                    os.close(fd)

    def _open_folder(self, rel: str) -> int | None:
        """A descriptor of the folder `rel` (refused if it resolves outside the table), opened from the table's
        real folder one component at a time, never through a link; None if it cannot be opened so (missing, not
        a folder, changed into a link since it was resolved)."""
        real = self._resolved(rel)[1]
        inside = real[len(self._real_root):].strip("/")
        fd = os.open(self._real_root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for part in inside.split("/") if inside else ():
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = child
        except OSError:
            os.close(fd)
            return None
        return fd

    @staticmethod
    def _is_link(fd: int, name: str) -> bool:
        try:
            return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            return False

    @staticmethod
    def _delete_in(fd: int, name: str) -> bool:
        """`delete` of the file `name` in the open folder `fd`: its Hadoop checksum, then itself."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f".{name}.crc", dir_fd=fd)
        try:
            os.unlink(name, dir_fd=fd)
            return True
        except FileNotFoundError:
            return False

    def delete_tree(self, rel: str) -> None:
        path = self.full(rel)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.unlink(path)


# fsspec protocols whose create-if-absent is one conditional request to the store, `If-None-Match: *`: s3fs
# sends it with the PUT or the completion of a multipart upload, adlfs with the Put Blob or the Put Block List.
CONDITIONAL_CREATE_PROTOCOLS = frozenset({"s3", "s3a", "abfs", "abfss", "az"})
# The user metadata key of a create's token (S3: sent as x-amz-meta-tms-create; Azure's keys are C# names)
CREATE_TOKEN_KEY = "tms-create"
AZURE_CREATE_TOKEN_KEY = "tms_create"
AZURE_PROTOCOLS = frozenset({"abfs", "abfss", "az"})
# S3's DeleteObjects takes at most this many keys a request.
S3_DELETE_BATCH = 1000
# Object stores: an object is written whole, once; there is no append.
OBJECT_STORE_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "adl"})


# What a store's answer means for the caller, passed on as it is; any other failure of a store's client (after
# its own retries with backoff: throttling, 5xx, timeouts, dropped connections) is the store not answering.
_ANSWERS = (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError, HudiError,
            NotImplementedError)
# The store clients' own exception types (they do not all derive from OSError)
_CLIENT_MODULES = ("botocore", "aiobotocore", "aiohttp", "s3fs", "azure", "adlfs", "gcsfs", "google", "urllib3",
                   "requests", "fsspec")
_F = TypeVar("_F", bound=Callable[..., Any])


def _unavailable(base_uri: str, error: BaseException) -> StorageUnavailableError:
    reason = (str(error).strip().splitlines() or [""])[0][:300]
    return StorageUnavailableError(f"cannot reach the store of {base_uri} (after its client's retries): "
                                   f"{type(error).__name__}: {reason}")


def _store_request(method: _F) -> _F:
    """A method whose requests may fail for want of the store: such a failure becomes StorageUnavailableError,
    one line naming the store and the reason (a task that cannot reach its store says so, and is retried)."""
    @functools.wraps(method)
    def wrapper(self: FsspecStorage, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except _ANSWERS:
            raise
        except Exception as e:
            if _is_client_failure(e):
                raise _unavailable(self.base_uri, e) from e
            raise
    return wrapper  # type: ignore[return-value]


def _precondition_failed(e: BaseException) -> bool:
    """An S3 answer that a conditional write's condition did not hold (412; 409 while another conditional
    write to the key is in flight), as s3fs passes it on (an OSError caused by the client's error)."""
    response = getattr(e.__cause__, "response", None) or {}
    return (response.get("Error", {}).get("Code") in ("PreconditionFailed", "ConditionalRequestConflict")
            or response.get("ResponseMetadata", {}).get("HTTPStatusCode") in (409, 412))


def _is_client_failure(e: Exception) -> bool:
    """A failure of the store's client (its network, its retries), not an answer the caller needs."""
    return isinstance(e, OSError) or type(e).__module__.split(".")[0] in _CLIENT_MODULES


def _protocols(fs: fsspec.AbstractFileSystem) -> set[str]:
    protocol = fs.protocol
    return {protocol} if isinstance(protocol, str) else set(protocol)


class _CreateOnClose:
    """A file opened for an exclusive create on a store that decides it when the upload completes (at
    `close`): a conflict is reported as InstantConflictError, as everywhere else."""

    def __init__(self, fh: Any, rel: str, uri: str):
        self._fh = fh
        self._rel = rel
        self._uri = uri

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)

    def write(self, data: bytes) -> int:
        return int(self._fh.write(data))

    def close(self) -> None:
        try:
            self._fh.close()
        except FileExistsError:
            raise InstantConflictError(f"{self._rel} already exists") from None
        except _ANSWERS:
            raise
        except Exception as e:
            if _is_client_failure(e):
                raise _unavailable(self._uri, e) from e
            raise

    def __enter__(self) -> _CreateOnClose:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FsspecStorage:
    """A table on an object store or HDFS, through fsspec. Object stores make a PUT visible atomically; on S3
    and Azure a create is conditional (`If-None-Match: *`), on other object stores it is refused, on a
    filesystem (HDFS) exclusivity is checked before the write."""

    def __init__(self, base_path: str, storage_options: dict[str, Any] | None = None):
        self.base_uri = base_path.rstrip("/")
        # No listings cache: fsspec keeps a filesystem instance per process and options, and s3fs, gcsfs and
        # adlfs keep each folder's listing in it without expiry, so a long-lived process (the service, the
        # planner) would list a timeline as it first saw it and never see another writer's new instants.
        options = {**(storage_options or {}), "use_listings_cache": False}
        self._fs, root = fsspec.core.url_to_fs(self.base_uri, **options)
        self.root = root.rstrip("/") or "/"
        protocols = self._protocols = _protocols(self._fs)
        self._conditional_create = bool(protocols & CONDITIONAL_CREATE_PROTOCOLS)
        # An object store without a conditional create here (GCS): two writers checking and then putting could
        # both win, so a create-once file is refused there.
        self._creates_unsafely = not self._conditional_create and bool(protocols & OBJECT_STORE_PROTOCOLS)
        # s3fs asks an object's size (a HEAD) before each whole-object read, to split large ones into parallel
        # ranged GETs; one GET is what a timeline read needs (instant files are small): half the requests.
        self._read_options: dict[str, Any] = {"max_concurrency": 1} if protocols & {"s3", "s3a"} else {}
        self.appends = not protocols & OBJECT_STORE_PROTOCOLS
        self._lists_after = bool(protocols & {"s3", "s3a"}) and not getattr(self._fs, "version_aware", False)

    def full(self, rel: str) -> str:
        return _join(self.root, rel)

    def require_inside(self, rels: Iterable[str]) -> None:
        for rel in rels:
            self.full(rel)

    def uri(self, rel: str) -> str:
        return f"{self.base_uri}/{rel}" if rel else self.base_uri

    def change_stamp(self, rel: str) -> int | None:
        return None

    def change_feed(self, rel: str, watcher: TimelineWatcher) -> FolderChanges | None:
        return None

    @contextmanager
    def local_copy(self, rel: str) -> Iterator[str]:
        with tempfile.TemporaryDirectory(prefix="tms-copy-") as tmp:
            path = os.path.join(tmp, posixpath.basename(rel))
            with open(path, "wb") as fh:
                fh.write(self.read_bytes(rel))
            yield path

    def create_from_local(self, rel: str, write: Callable[[str], None]) -> None:
        with tempfile.TemporaryDirectory(prefix="tms-copy-") as tmp:
            path = os.path.join(tmp, posixpath.basename(rel))
            write(path)
            with open(path, "rb") as src, self.open_new(rel) as dst:
                while chunk := src.read(1 << 22):
                    dst.write(chunk)

    def arrow_filesystem(self) -> pafs.FileSystem:
        return pafs.PyFileSystem(pafs.FSSpecHandler(self._fs))

    @_store_request
    def exists(self, rel: str) -> bool:
        return bool(self._fs.exists(self.full(rel)))

    @_store_request
    def read_bytes(self, rel: str) -> bytes:
        return bytes(self._fs.cat_file(self.full(rel), **self._read_options))

    def open(self, rel: str, mode: str = "rb") -> IO[bytes]:
        return self._fs.open(self.full(rel), mode)  # type: ignore[no-any-return]

    @_store_request
    def listdir(self, rel: str) -> list[FileInfo]:
        try:
            entries = self._fs.ls(self.full(rel), detail=True)
        except FileNotFoundError:
            return []
        out = []
        for e in entries:
            name = posixpath.basename(e["name"].rstrip("/"))
            if name.startswith(TEMP_PREFIX):
                continue
            mtime = e.get("mtime") or e.get("LastModified")
            mtime = mtime.timestamp() if hasattr(mtime, "timestamp") else mtime
            out.append(FileInfo(name, posixpath.join(rel, name), int(e.get("size") or 0), mtime,
                                e.get("type") == "directory"))
        return out

    def names(self, rel: str) -> list[str]:
        return [i.name for i in self.listdir(rel)]

    @_store_request
    def names_after(self, rel: str, start_after: str) -> list[str] | None:
        if not self._lists_after:  # S3's ListObjectsV2 has `StartAfter`; fsspec's other stores list it all
            return None
        bucket, key, _ = self._fs.split_path(self.full(rel))
        prefix = f"{key.rstrip('/')}/" if key else ""
        request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "Delimiter": "/",
                                   "StartAfter": prefix + start_after}
        names: list[str] = []
        while True:
            page = self._fs.call_s3("list_objects_v2", **request)
            names += [c["Key"][len(prefix):] for c in page.get("Contents", ())]
            names += [p["Prefix"][len(prefix):].rstrip("/") for p in page.get("CommonPrefixes", ())]
            if not page.get("IsTruncated"):
                return [n for n in names if n and not n.startswith(TEMP_PREFIX)]
            request["ContinuationToken"] = page["NextContinuationToken"]

    @_store_request
    def info(self, rel: str) -> FileInfo:
        i = self._fs.info(self.full(rel))
        return FileInfo(posixpath.basename(rel), rel, int(i.get("size") or 0), i.get("mtime"),
                        i.get("type") == "directory")

    @_store_request
    def makedirs(self, rel: str) -> None:
        self._fs.makedirs(self.full(rel), exist_ok=True)

    @_store_request
    def write_atomic(self, rel: str, data: bytes, *, overwrite: bool = False) -> None:
        target = self.full(rel)
        if overwrite:
            if self.appends:  # a filesystem (HDFS): the folder first; an object store has none
                self._fs.makedirs(posixpath.dirname(target), exist_ok=True)
            self._fs.pipe_file(target, data)
        else:
            self._create(rel, data)

    @_store_request
    def write_new(self, rel: str, data: bytes) -> None:
        self._create(rel, data)

    def _refuse_unsafe_create(self, rel: str) -> None:
        if self._creates_unsafely:
            raise UnsupportedStorageError(
                f"cannot create {self.uri(rel)} once and only once: TMS has no conditional create for this store "
                "(S3 and Azure Blob storage have one)")

    def _create(self, rel: str, data: bytes) -> None:
        self._refuse_unsafe_create(rel)
        target = self.full(rel)
        if self._conditional_create:
            # A token of this create in the object's metadata: when a PUT's answer is lost and the client
            # retries it, the retry finds the object the first attempt made; the token tells it is its own
            # (exactly: another writer's object has another token), not another writer's.
            token = uuid.uuid4().hex
            try:
                self._put_new(target, data, token)
            except FileExistsError:
                if self._create_token(target) == token:
                    return
                raise InstantConflictError(f"{rel} already exists") from None
            return
        if self._fs.exists(target):
            raise InstantConflictError(f"{rel} already exists")
        if self.appends:
            self._fs.makedirs(posixpath.dirname(target), exist_ok=True)
        self._fs.pipe_file(target, data)

    def _put_new(self, target: str, data: bytes, token: str) -> None:
        """One conditional create (If-None-Match: *) carrying `token` in the object's metadata; FileExistsError
        if the object exists."""
        if not self._protocols & AZURE_PROTOCOLS:
            self._fs.pipe_file(target, data, mode="create", Metadata={CREATE_TOKEN_KEY: token})
            return
        container, blob, _ = self._fs.split_path(target)

        async def upload() -> None:
            async with self._fs.service_client.get_blob_client(container=container, blob=blob) as client:
                await client.upload_blob(data, overwrite=False,
                                         metadata={"is_directory": "false", AZURE_CREATE_TOKEN_KEY: token})
        try:
            fsspec.asyn.sync(self._fs.loop, upload)
        except Exception as e:
            if type(e).__name__ == "ResourceExistsError":
                raise FileExistsError(target) from None
            raise

    def _create_token(self, target: str) -> str | None:
        """The token of the create that made the object at `target` (None: none, or not TMS's)."""
        if not self._protocols & AZURE_PROTOCOLS:
            return self._fs.metadata(target).get(CREATE_TOKEN_KEY)  # type: ignore[no-any-return]
        container, blob, _ = self._fs.split_path(target)

        async def properties() -> str | None:
            async with self._fs.service_client.get_blob_client(container=container, blob=blob) as client:
                token: str | None = (await client.get_blob_properties()).metadata.get(AZURE_CREATE_TOKEN_KEY)
                return token
        made_by: str | None = fsspec.asyn.sync(self._fs.loop, properties)
        return made_by

    @_store_request
    def open_new(self, rel: str) -> IO[bytes]:
        self._refuse_unsafe_create(rel)
        if self._conditional_create:  # decided when the upload completes
            return _CreateOnClose(self._fs.open(self.full(rel), "xb"), rel, self.uri(rel))  # type: ignore[return-value]
        if self._fs.exists(self.full(rel)):
            raise InstantConflictError(f"{rel} already exists")
        return self._fs.open(self.full(rel), "wb")  # type: ignore[no-any-return]

    @_store_request
    def append(self, rel: str, data: bytes) -> None:
        if not self.appends:
            raise NotImplementedError(f"{self.base_uri} is on an object store, which cannot append to {rel}")
        with self._fs.open(self.full(rel), "ab") as fh:
            fh.write(data)

    @_store_request
    def read_versioned(self, rel: str) -> tuple[bytes, str] | None:
        target = self.full(rel)
        if self._protocols & {"s3", "s3a"}:
            bucket, key, _ = self._fs.split_path(target)

            async def get() -> tuple[bytes, str]:
                answer = await self._fs._call_s3("get_object", Bucket=bucket, Key=key)
                async with answer["Body"] as body:
                    return await body.read(), answer["ETag"]
            try:
                got: tuple[bytes, str] = fsspec.asyn.sync(self._fs.loop, get)
            except FileNotFoundError:
                return None
            return got
        if self._protocols & AZURE_PROTOCOLS:
            container, blob, _ = self._fs.split_path(target)

            async def download() -> tuple[bytes, str]:
                async with self._fs.service_client.get_blob_client(container=container, blob=blob) as client:
                    stream = await client.download_blob()
                    return await stream.readall(), stream.properties.etag

            try:
                downloaded: tuple[bytes, str] = fsspec.asyn.sync(self._fs.loop, download)
            except Exception as e:
                if type(e).__name__ == "ResourceNotFoundError":
                    return None
                raise
            return downloaded
        raise UnsupportedStorageError(f"no conditional writes on {self.base_uri}'s store (S3 and Azure have them)")

    @_store_request
    def replace_if(self, rel: str, data: bytes, version: str | None) -> str | None:
        target = self.full(rel)
        if self._protocols & {"s3", "s3a"}:
            bucket, key, _ = self._fs.split_path(target)
            condition = {"IfNoneMatch": "*"} if version is None else {"IfMatch": version}
            try:
                answer = self._fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, **condition)
            except (FileExistsError, FileNotFoundError):
                return None  # created meanwhile (If-None-Match), or gone (If-Match)
            except OSError as e:
                if _precondition_failed(e):
                    return None
                raise
            return str(answer["ETag"])
        if self._protocols & AZURE_PROTOCOLS:
            from azure.core import MatchConditions
            container, blob, _ = self._fs.split_path(target)
            precondition: dict[str, Any] = ({"overwrite": False} if version is None else
                                            {"overwrite": True, "etag": version,
                                             "match_condition": MatchConditions.IfNotModified})

            async def upload() -> str:
                async with self._fs.service_client.get_blob_client(container=container, blob=blob) as client:
                    return str((await client.upload_blob(data, **precondition))["etag"])

            try:
                uploaded: str = fsspec.asyn.sync(self._fs.loop, upload)
                return uploaded
            except Exception as e:
                if type(e).__name__ in ("ResourceExistsError", "ResourceModifiedError", "ResourceNotFoundError"):
                    return None
                raise
        raise UnsupportedStorageError(f"no conditional writes on {self.base_uri}'s store (S3 and Azure have them)")

    @_store_request
    def touch(self, rel: str) -> None:
        self._fs.touch(self.full(rel), truncate=True)

    @_store_request
    def delete(self, rel: str, *, missing_ok: bool = True) -> bool:
        try:
            self._fs.rm_file(self.full(rel))
            return True
        except FileNotFoundError:
            if missing_ok:
                return False
            raise

    @_store_request
    def delete_many(self, rels: list[str]) -> list[str]:
        if not self._protocols & {"s3", "s3a"}:
            return [rel for rel in rels if self.delete(rel)]
        deleted: list[str] = []
        located = [(*self._fs.split_path(self.full(rel)), rel) for rel in rels]  # every path confined first
        for start in range(0, len(located), S3_DELETE_BATCH):
            batch = located[start:start + S3_DELETE_BATCH]
            keys = {key: rel for _, key, _, rel in batch}
            bucket = batch[0][0]

            async def delete_objects(keys: dict[str, str] = keys, bucket: str = bucket) -> Any:
                return await self._fs._call_s3("delete_objects", Bucket=bucket, Delete={
                    "Objects": [{"Key": key} for key in keys], "Quiet": True})
            answer = fsspec.asyn.sync(self._fs.loop, delete_objects)
            failed = {e.get("Key") for e in answer.get("Errors", [])}  # quiet: only the failures are named
            deleted += [rel for key, rel in keys.items() if key not in failed]
        return deleted

    @_store_request
    def delete_tree(self, rel: str) -> None:
        if self.exists(rel):
            self._fs.rm(self.full(rel), recursive=True)
