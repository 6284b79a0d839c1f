"""The archived timeline of table versions 8 and later (Hudi's LSM timeline, `<timeline>/history`), for what the
active timeline no longer says: when an archived instant completed (a log file written by an archived delta
commit belongs to the file slice its completion time falls in, so the file-system view needs it), and the recent
archived instants' plans and metadata (incremental scheduling after its last plan was archived).

Layout (Hudi's LSMTimeline): `_version_` holds the current version N; `manifest_N` lists, as JSON, the parquet
files of the version, each named `<min instant>_<max instant>_<level>.parquet` and holding one row per archived
instant (HoodieLSMTimelineInstant: instantTime, completionTime, action, metadata, plan). Files are immutable and
a new version is written by the archiver (or its compaction) before `_version_` names it, so a reader that
finds an instant missing reads `_version_` again, once."""
from __future__ import annotations

import io
import json
import posixpath
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import HudiError
from ..storage.table_storage import Storage

HISTORY_DIR = "history"
VERSION_FILE = "_version_"
# The files whose rows rows_from keeps, decoded: the newest few, each of at most this many bytes.
_KEPT_FILES = 4
_KEPT_FILE_BYTES = 1 << 20


@dataclass(frozen=True)
class ArchivedRow:
    """An archived instant, with the bytes of one of its columns (`metadata` or `plan`) when asked for."""
    instant_time: str
    completion_time: str | None
    action: str
    content: bytes | None = None


class ArchivedTimeline:
    """Completion times of archived instants, read on demand: per file whose instant range covers the instant
    asked for, the two columns only; cached per version."""

    def __init__(self, storage: Storage, timeline_dir: str):
        self.storage = storage
        self.dir = posixpath.join(timeline_dir, HISTORY_DIR)
        self._version: str | None = None
        self._files: list[tuple[str, str, str]] = []        # (min instant, max instant, file name)
        self._rows_kept: OrderedDict[tuple[str, str], list[ArchivedRow]] = OrderedDict()  # (file, column) -> rows
        self._read: dict[str, dict[str, str]] = {}          # file name -> instant time -> completion time

    def completion_time(self, timestamp: str) -> str | None:
        """When the archived instant at `timestamp` completed; None if the archived timeline lacks it. The
        manifest is (re)read on a miss: first use, or a version written since."""
        found = self._lookup(timestamp)
        if found is None and self._refresh():
            found = self._lookup(timestamp)
        return found

    def _lookup(self, timestamp: str) -> str | None:
        for low, high, name in self._files:
            if low <= timestamp <= high:
                times = self._read.get(name)
                if times is None:
                    times = self._read[name] = self._completion_times(name)
                if timestamp in times:
                    return times[timestamp]
        return None

    def rows_from(self, low: str, actions: tuple[str, ...], column: str,
                  max_files: int | None = None) -> Iterator[ArchivedRow]:
        """The archived instants of `actions` in the files whose instant range reaches `low` or later (each file
        read once, newest first, at most `max_files`; rows newest first within it), with their `column`
        ("metadata" or "plan"). A file's range bounds its rows' instant times, so every archived instant at or
        after `low` is among them (all files read), and older ones of those files too: callers filter."""
        self._refresh()
        reaching = [f for f in sorted(self._files, key=lambda f: f[1], reverse=True) if f[1] >= low]
        for _low, _high, name in reaching[:max_files]:
            yield from (row for row in self._rows(name, column) if row.action in actions)

    def _rows(self, name: str, column: str) -> list[ArchivedRow]:
        """A file's rows, newest first, with `column`; the newest small files' kept (files are immutable, and the
        next plan reads the archiver's newest again)."""
        kept = self._rows_kept.get((name, column))
        if kept is not None:
            self._rows_kept.move_to_end((name, column))
            return kept
        data, table = self._read_columns(name, ["instantTime", "completionTime", "action", column])
        contents = table.column(column).to_pylist()
        rows = sorted((ArchivedRow(t, c or None, a, contents[n]) for n, (t, c, a) in enumerate(zip(
            *(table.column(c).to_pylist() for c in ("instantTime", "completionTime", "action")), strict=True))),
            key=lambda row: row.instant_time, reverse=True)
        if len(data) <= _KEPT_FILE_BYTES:
            self._rows_kept[(name, column)] = rows
            while len(self._rows_kept) > _KEPT_FILES:
                self._rows_kept.popitem(last=False)
        return rows

    def _refresh(self) -> bool:
        """Read `_version_` and its manifest again; True if the version changed."""
        try:
            version = self.storage.read_bytes(posixpath.join(self.dir, VERSION_FILE)).decode().strip()
        except FileNotFoundError:
            return False  # nothing archived yet
        if version == self._version:
            return False
        try:
            manifest = json.loads(self.storage.read_bytes(posixpath.join(self.dir, f"manifest_{version}")))
        except (FileNotFoundError, ValueError) as exc:
            raise HudiError(f"the archived timeline's version {version} has no readable manifest: {exc}") from exc
        files = []
        for entry in manifest.get("files", []) if isinstance(manifest, dict) else [None]:
            name = entry.get("fileName") if isinstance(entry, dict) else None
            parts = name.removesuffix(".parquet").split("_") if isinstance(name, str) else []
            if not isinstance(name, str) or "/" in name or len(parts) != 3:  # a file of this folder, as Hudi names it
                raise HudiError(f"the archived timeline's manifest_{version} names an unexpected file: {entry!r}")
            files.append((parts[0], parts[1], name))
        self._version, self._files = version, files
        self._read = {name: times for name, times in self._read.items() if any(f[2] == name for f in files)}
        return True

    def _read_columns(self, name: str, columns: list[str]) -> tuple[bytes, pa.Table]:
        """An archived file's bytes and `columns`; HudiError, one line, if it is not an LSM timeline file."""
        data = self.storage.read_bytes(posixpath.join(self.dir, name))
        try:
            return data, pq.read_table(io.BytesIO(data), columns=columns)
        except (pa.ArrowException, ValueError) as exc:
            raise HudiError(f"the archived timeline's file {name} cannot be read: {exc}") from exc

    def _completion_times(self, name: str) -> dict[str, str]:
        _data, table = self._read_columns(name, ["instantTime", "completionTime"])
        return {t: c for t, c in zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True) if c}
