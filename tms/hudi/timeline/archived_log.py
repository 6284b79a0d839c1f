"""The archived timeline of table version 6 (Hudi 0.x): log files `.commits_.archive.<N>_1-0-1` in the archive
folder (`.hoodie/archived`, `hoodie.archivelog.folder`), their Avro data blocks holding one HoodieArchivedMetaEntry
record per archived instant file (requested, inflight and completed alike), as Hudi 0.15's HoodieTimelineArchiver
writes them and its HoodieArchivedTimeline (`show_archived_commits`) reads them.

A record (MetadataConversionUtils.createMetaWrapper) names the instant (`commitTime`, `actionType`, `actionState`,
`stateTransitionTime`: when its file was written) and holds the file's content in the field of its action: the
commit metadata (converted from its JSON, `ROLLING_STAT` blanked in its extra metadata), the clean metadata or
cleaner plan, the rollback metadata, the compaction plan of a requested compaction, the requested replace metadata
or inflight replace commit metadata. A completed file that is empty gives a record of the names only.

Each archival writes a file of its own (Hudi rolls a log file over on storage that cannot append: local and object
stores), its records in blocks of `hoodie.commits.archival.batch` (10)."""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from ..errors import HudiError
from ..log_format.log_file import BlockType, avro_records_block, read_log_file
from ..storage.table_storage import Storage
from .avro_schemas import ARCHIVED_META_ENTRY_V6
from .instant import Action, State
from .serde import json_commit_metadata, parse_any_avro

ARCHIVE_FILE_PREFIX = ".commits_.archive."
WRITE_TOKEN = "1-0-1"  # HoodieLogFormat's token of a writer outside a task
_ARCHIVE_FILE = re.compile(r"^\.commits_\.archive\.(\d+)_(.+)$")
ROLLING_STAT = "ROLLING_STAT"  # HoodieRollingStatMetadata.ROLLING_STAT_METADATA_KEY, blanked when archived


def archive_file_version(name: str) -> int | None:
    m = _ARCHIVE_FILE.match(name)
    return int(m.group(1)) if m else None


# --- records ---------------------------------------------------------------------------------------------------


def _json_commit(data: bytes) -> dict[str, Any]:
    return json_commit_metadata(data) if data.strip() else {}


def _avro_commit(doc: dict[str, Any], *, replace: bool) -> dict[str, Any]:
    """The Avro commit metadata Jackson converts Hudi's commit metadata into (convertCommitMetadata,
    ReplaceArchivalHelper.convertReplaceCommitMetadata): its fields the Avro record has, the operation COMPACT
    for a compaction's commit, `ROLLING_STAT` blanked in the extra metadata."""
    operation = doc.get("operationType") or "UNKNOWN"
    if doc.get("compacted") and not replace:
        operation = "COMPACT"
    record = {"partitionToWriteStats": doc.get("partitionToWriteStats") or {},
              "extraMetadata": {**(doc.get("extraMetadata") or {}), ROLLING_STAT: ""},
              "version": doc.get("version"), "operationType": operation}
    if replace:
        record["partitionToReplaceFileIds"] = doc.get("partitionToReplaceFileIds") or {}
    return record


def _avro_file(data: bytes) -> dict[str, Any]:
    return parse_any_avro(data)[1]


_ACTION_TYPES = {Action.CLEAN, Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.ROLLBACK,
                 Action.SAVEPOINT, Action.COMPACTION, Action.LOG_COMPACTION}


def meta_entry(timestamp: str, action: str, state: State, transition_time: str | None,
               data: bytes) -> dict[str, Any]:
    """The HoodieArchivedMetaEntry of one instant file (`data`: its content), as createMetaWrapper makes it."""
    if action not in _ACTION_TYPES:
        raise HudiError(f"cannot archive a {action} instant: Hudi 0.15's archiver does not support the action")
    entry: dict[str, Any] = {"commitTime": timestamp, "actionState": state.name, "actionType": str(action),
                             "stateTransitionTime": transition_time, "version": None}
    if state == State.COMPLETED and not data:
        return entry  # createMetaWrapperForEmptyInstant
    if action == Action.CLEAN:
        if state == State.COMPLETED:
            entry["hoodieCleanMetadata"] = _avro_file(data)
        elif data:
            entry["hoodieCleanerPlan"] = _avro_file(data)
    elif action in (Action.COMMIT, Action.DELTA_COMMIT):
        entry["hoodieCommitMetadata"] = _avro_commit(_json_commit(data), replace=False)
    elif action == Action.REPLACE_COMMIT:
        if state == State.COMPLETED:
            entry["hoodieReplaceCommitMetadata"] = _avro_commit(_json_commit(data), replace=True)
        elif state == State.INFLIGHT and data:
            entry["HoodieInflightReplaceMetadata"] = _avro_commit(_json_commit(data), replace=False)
        elif state == State.REQUESTED and data:
            entry["hoodieRequestedReplaceMetadata"] = _avro_file(data)
    elif action == Action.ROLLBACK:
        if state == State.COMPLETED:
            entry["hoodieRollbackMetadata"] = _avro_file(data)
    elif action == Action.SAVEPOINT:
        entry["hoodieSavePointMetadata"] = _avro_file(data)
    elif state == State.REQUESTED:  # compaction, log compaction: the plan
        entry["hoodieCompactionPlan"] = _avro_file(data)
    return entry


# --- files -----------------------------------------------------------------------------------------------------


class ArchivedLogWriter:
    def __init__(self, storage: Storage, archive_dir: str, batch_size: int = 10):
        if batch_size < 1:
            raise HudiError(f"hoodie.commits.archival.batch must be at least 1, got {batch_size}")
        self.storage = storage
        self.dir = archive_dir
        self.batch_size = batch_size

    def next_file_name(self) -> str:
        """The file this archival writes: the version after the latest one (Hudi's log writer rolls over)."""
        versions = [v for n in self.storage.names(self.dir) if (v := archive_file_version(n)) is not None]
        return f"{ARCHIVE_FILE_PREFIX}{max(versions, default=0) + 1}_{WRITE_TOKEN}"

    def write(self, entries: list[dict[str, Any]]) -> str:
        """Write `entries` as a new archive file, in blocks of the batch size; the file's name."""
        if not entries:
            raise HudiError("no instants to archive")
        name = self.next_file_name()
        blocks = [avro_records_block(entries[i:i + self.batch_size], ARCHIVED_META_ENTRY_V6)
                  for i in range(0, len(entries), self.batch_size)]
        self.storage.write_atomic(posixpath.join(self.dir, name), b"".join(blocks))
        return name


@dataclass(frozen=True)
class ArchivedEntry:
    """One archived instant file: its instant time, action, state, when it was written, and its record."""
    timestamp: str
    action: str
    state: str
    transition_time: str | None
    record: dict[str, Any]


class ArchivedLogTimeline:
    """The instants a v6 table archived, read from its archive files (oldest version first; a crashed write's
    partial block is skipped, as Hudi's reader skips corrupt blocks)."""

    def __init__(self, storage: Storage, archive_dir: str):
        self.storage = storage
        self.dir = archive_dir

    def files(self) -> list[str]:
        named = [(v, n) for n in self.storage.names(self.dir) if (v := archive_file_version(n)) is not None]
        return [n for _, n in sorted(named)]

    def entries(self) -> list[ArchivedEntry]:
        found = []
        for name in self.files():
            for block in read_log_file(self.storage.read_bytes(posixpath.join(self.dir, name))):
                if block.block_type != BlockType.AVRO_DATA:
                    continue
                for r in block.avro_records():
                    found.append(ArchivedEntry(r["commitTime"], r["actionType"], r.get("actionState") or "COMPLETED",
                                               r.get("stateTransitionTime"), r))
        return found

    def completed(self) -> list[ArchivedEntry]:
        """The archived completed instants, by instant time (the first record of each, if archived twice)."""
        seen: dict[tuple[str, str], ArchivedEntry] = {}
        for e in self.entries():
            if e.state == State.COMPLETED.name:
                seen.setdefault((e.timestamp, e.action), e)
        return sorted(seen.values(), key=lambda e: (e.timestamp, e.action))
