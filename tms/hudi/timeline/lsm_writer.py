"""Writes Hudi's archived timeline of table versions 8 and later (the LSM timeline under `<timeline>/history`),
as Java's LSMTimelineWriter does, so that Java's readers (`show_archived_commits`, the archived timeline loaded by
completion-time queries) and TMS's `ArchivedTimeline` read what TMS archived.

- A batch of archived instants becomes one layer-0 Parquet file `<first instant>_<last instant>_0.parquet` of
  HoodieLSMTimelineInstant rows, then a new manifest `manifest_<N+1>` (JSON: the files of the new version) and
  `_version_` naming it. A file that exists already is the leftover of an archival that crashed: if the latest
  manifest lists it, that archival committed (it is not written again); otherwise it is rewritten.
- Compaction (`hoodie.timeline.compaction.batch.size`, default 10): while a layer holds that many files, its
  oldest ones (consecutive, at most the batch, at most 1000 MB together, at least 2) are merged into one file of
  the next layer, `<min>_<max>_<layer+1>.parquet`, and a new version replaces them with it.
- Cleaning: of the manifest versions, the latest 3 (plus one per layer compacted this time) are kept; older
  manifests and the Parquet files no kept version lists are deleted."""
from __future__ import annotations

import io
import json
import posixpath
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import HudiError
from ..storage.table_storage import Storage
from .archived import HISTORY_DIR, VERSION_FILE

MANIFEST_PREFIX = "manifest_"
_MANIFEST = re.compile(r"^manifest_(\d+)$")
_DATA_FILE = re.compile(r"^(\d+)_(\d+)_(\d)\.parquet$")
# LSMTimelineWriter: manifest versions a reader may still be reading, and the size cap of one compaction
RETAINED_VERSIONS = 3
COMPACTION_MAX_BYTES = 1000 * 1024 * 1024
INSTANT_VERSION = 1  # LSMTimeline.LSM_TIMELINE_INSTANT_VERSION_1

# HoodieLSMTimelineInstant, as Hudi's Avro model declares it (the Parquet files carry it as parquet-avro does)
AVRO_SCHEMA = {
    "type": "record", "name": "HoodieLSMTimelineInstant", "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "instantTime", "type": ["null", {"type": "string", "avro.java.string": "String"}], "default": None},
        {"name": "completionTime", "type": ["null", {"type": "string", "avro.java.string": "String"}],
         "default": None},
        {"name": "action", "type": ["null", {"type": "string", "avro.java.string": "String"}], "default": None},
        {"name": "metadata", "type": ["null", "bytes"], "default": None},
        {"name": "plan", "type": ["null", "bytes"], "default": None},
        {"name": "version", "type": "int", "default": 1},
    ],
}
ARROW_SCHEMA = pa.schema([
    pa.field("instantTime", pa.string()), pa.field("completionTime", pa.string()), pa.field("action", pa.string()),
    pa.field("metadata", pa.binary()), pa.field("plan", pa.binary()),
    pa.field("version", pa.int32(), nullable=False),
], metadata={"parquet.avro.schema": json.dumps(AVRO_SCHEMA, separators=(",", ":")), "writer.model.name": "avro"})


@dataclass(frozen=True)
class ArchivedInstant:
    """One row of the LSM timeline: an archived instant with its completed file's bytes (`metadata`, None if
    empty) and its plan's (`plan`: the requested file of a clean, compaction or clustering)."""
    instant_time: str
    completion_time: str | None
    action: str
    metadata: bytes | None
    plan: bytes | None

    def row(self) -> dict[str, Any]:
        return {"instantTime": self.instant_time, "completionTime": self.completion_time, "action": self.action,
                "metadata": self.metadata, "plan": self.plan, "version": INSTANT_VERSION}


def file_layer(name: str) -> int:
    m = _DATA_FILE.match(name)
    return int(m.group(3)) if m else 0


def _file_range(name: str) -> tuple[str, str]:
    m = _DATA_FILE.match(name)
    if m is None:
        raise HudiError(f"unexpected archived timeline file name {name!r}")
    return m.group(1), m.group(2)


class LSMTimelineWriter:
    def __init__(self, storage: Storage, timeline_dir: str, compaction_batch_size: int = 10):
        if compaction_batch_size < 2:
            raise HudiError(f"hoodie.timeline.compaction.batch.size must be at least 2, got {compaction_batch_size}")
        self.storage = storage
        self.dir = posixpath.join(timeline_dir, HISTORY_DIR)
        self.batch_size = compaction_batch_size

    def _path(self, name: str) -> str:
        return posixpath.join(self.dir, name)

    # --- versions and manifests ------------------------------------------------------------------
    def all_versions(self) -> list[int]:
        return [int(m.group(1)) for n in self.storage.names(self.dir) if (m := _MANIFEST.match(n))]

    def latest_version(self) -> int:
        """`_version_`'s number; if it is unreadable, the highest manifest's (as LSMTimeline does); -1: none."""
        try:
            return int(self.storage.read_bytes(self._path(VERSION_FILE)).decode().strip())
        except (FileNotFoundError, ValueError):
            return max(self.all_versions(), default=-1)

    def manifest(self, version: int) -> list[tuple[str, int]]:
        """(file name, length) of the files a version lists, in the manifest's order."""
        if version < 0:
            return []
        try:
            data = json.loads(self.storage.read_bytes(self._path(f"{MANIFEST_PREFIX}{version}")))
        except (FileNotFoundError, ValueError) as exc:
            raise HudiError(f"the archived timeline's manifest {version} is unreadable: {exc}") from exc
        return [(f["fileName"], int(f["fileLen"])) for f in data.get("files") or []]

    def _update_manifest(self, remove: list[str], add: str) -> None:
        """A new version: the latest one's files less `remove`, plus `add`; the manifest first, then
        `_version_` (a reader finds either the old version whole or the new one whole)."""
        version = self.latest_version()
        files = [f for f in self.manifest(version) if f[0] not in remove]
        files.append((add, self.storage.info(self._path(add)).size))
        new = 1 if version < 0 else version + 1
        body = json.dumps({"files": [{"fileName": n, "fileLen": size} for n, size in files]}, indent=2)
        self.storage.delete(self._path(f"{MANIFEST_PREFIX}{new}"))  # a crashed write's leftover
        self.storage.write_atomic(self._path(f"{MANIFEST_PREFIX}{new}"), body.encode())
        self.storage.write_atomic(self._path(VERSION_FILE), str(new).encode(), overwrite=True)

    # --- writing -----------------------------------------------------------------------------------
    def write(self, instants: list[ArchivedInstant]) -> str | None:
        """Archive `instants` (sorted by instant time) as one layer-0 file and a new version; the file's name,
        or None if an earlier archival of the same batch committed it already."""
        if not instants:
            raise HudiError("no instants to archive")
        name = f"{instants[0].instant_time}_{instants[-1].instant_time}_0.parquet"
        if self.storage.exists(self._path(name)):
            if any(n == name for n, _ in self.manifest(self.latest_version())):
                return None
            self.storage.delete(self._path(name))
        self._write_file(name, pa.Table.from_pylist([i.row() for i in instants], ARROW_SCHEMA))
        self._update_manifest([], name)
        return name

    def _write_file(self, name: str, rows: pa.Table) -> None:
        out = io.BytesIO()
        pq.write_table(rows.cast(ARROW_SCHEMA), out, compression="gzip")
        self.storage.write_atomic(self._path(name), out.getvalue(), overwrite=True)

    def read_rows(self, name: str) -> pa.Table:
        table = pq.read_table(io.BytesIO(self.storage.read_bytes(self._path(name))))
        return table.select(ARROW_SCHEMA.names).cast(ARROW_SCHEMA)

    def compact_and_clean(self) -> list[str]:
        """Compact full layers, lowest first, then clean old versions; the compacted files written."""
        files = self.manifest(self.latest_version())
        written: list[str] = []
        layer = 0
        while (compacted := self._compact(files, layer)) is not None:
            written.append(compacted)
            files = self.manifest(self.latest_version())
            layer += 1
        self._clean(layer)
        return written

    def _compact(self, files: list[tuple[str, int]], layer: int) -> str | None:
        in_layer = sorted(f for f in files if file_layer(f[0]) == layer)
        if len(in_layer) < self.batch_size:
            return None
        candidates: list[str] = []
        total = 0
        for name, size in in_layer:
            total += size
            candidates.append(name)
            if len(candidates) >= self.batch_size:
                break
            if total > COMPACTION_MAX_BYTES:
                if len(candidates) < 2:
                    total, candidates = 0, []
                else:
                    break
        if len(candidates) < 2:
            return None
        ranges = [_file_range(n) for n in candidates]
        name = f"{min(r[0] for r in ranges)}_{max(r[1] for r in ranges)}_{layer + 1}.parquet"
        self._write_file(name, pa.concat_tables([self.read_rows(n) for n in candidates]))
        self._update_manifest(candidates, name)
        return name

    def _clean(self, compacted_layers: int) -> None:
        versions = sorted(self.all_versions(), reverse=True)
        keep = RETAINED_VERSIONS + compacted_layers
        if len(versions) <= keep:
            return
        kept = versions[:keep]
        files_kept = {n for v in kept for n, _ in self.manifest(v)}
        for v in versions[keep:]:
            self.storage.delete(self._path(f"{MANIFEST_PREFIX}{v}"))
        for name in self.storage.names(self.dir):
            if name.endswith(".parquet") and name not in files_kept:
                self.storage.delete(self._path(name))
