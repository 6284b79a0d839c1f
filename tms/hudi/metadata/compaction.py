"""The metadata table's own compaction, run as Hudi's metadata writer runs it: before each delta commit it adds
(HoodieBackedTableMetadataWriter.performTableServices), under the data table's lock.

- A compaction left pending on the MDT (a crash) is finished first, from its plan.
- A new one is due once `hoodie.metadata.compact.max.delta.commits` delta commits follow the last one.
- Every file slice with log files is compacted (Hudi's UnBoundedCompactionStrategy for the MDT): its base HFile
  and log blocks merged as readers merge them, written as a new base HFile at the compaction's instant.
- Only when every MDT delta commit is settled: none pending on the MDT and no data instant pending that has an
  MDT instant (its blocks would be left out of the base for good, and a later rollback of it could not reach
  them); on table version 6 also no data instant pending before the MDT's latest delta commit (Hudi 0.x's
  validateTimelineBeforeSchedulingCompaction). A compaction not due or not
  safe now is simply left for a later delta commit, as Hudi's writer leaves it.
- The instant: a fresh one on versions 8 and 9 (Hudi 1.x: later log files belong to the next slice by completion
  time), the latest delta commit's time with `001` appended on version 6 (HoodieTableMetadataUtil.
  createCompactionTimestamp: later log files are named after the new base instant)."""
from __future__ import annotations

import json
import logging
import posixpath

from fastavro.schema import to_parsing_canonical_form

from ..config.write import METADATA_COMPACT_MAX_DELTA_COMMITS
from ..errors import HudiError
from ..fs_view.file_names import BaseFileName, LogFileName, write_token
from ..fs_view.view import BaseFile, FileSlice, LogFile
from ..log_format.hfile import read_hfile, write_hfile
from ..table.hudi_table import HudiTable
from ..timeline.instant import Action, Instant, State
from ..timeline.serde import (
    CommitMetadata,
    CompactionOperation,
    CompactionPlan,
    WriteStat,
    parse_compaction_plan,
    serialize_commit_metadata,
    serialize_compaction_plan,
)
from . import keys as K
from .avro_schema import schema_text
from .reader import MetadataTable
from .records import decode_value, encode_record

log = logging.getLogger(__name__)


def finish_pending_compactions(data: HudiTable, mdt: MetadataTable) -> bool:
    """Finish any compaction a crash left pending on the MDT, from its plan; whether there was one."""
    pending = mdt.table.timeline.pending((Action.COMPACTION,))
    for inst in pending:
        _execute(data, mdt, inst)
    return bool(pending)


def compact_if_due(data: HudiTable, mdt: MetadataTable) -> str | None:
    """Compact `data`'s metadata table `mdt` if a compaction is due and safe: its instant, or None. The caller
    holds the table's lock (as for any MDT write) and has checked that nothing is pending on the MDT."""
    instant = _due_instant(data, mdt)
    if instant is None:
        return None
    plan = _plan(mdt)
    if not plan.operations:
        return None
    requested = mdt.table.timeline.create_requested(Action.COMPACTION, serialize_compaction_plan(plan),
                                                    timestamp=instant)
    return _execute(data, mdt, requested)


def _due_instant(data: HudiTable, mdt: MetadataTable) -> str | None:
    """The instant of a compaction due now and safe to run, or None."""
    tl = mdt.table.timeline
    last = tl.last_of((Action.COMMIT,), completed=True)
    deltas = [i for i in tl.completed((Action.DELTA_COMMIT,)) if last is None or i.timestamp > last.timestamp]
    if len(deltas) < METADATA_COMPACT_MAX_DELTA_COMMITS.value(data.config.props):
        return None
    pending_data = data.timeline.pending()
    if any(tl.states_of(i.timestamp) for i in pending_data):
        return None
    latest = max(i.timestamp for i in deltas)
    if data.config.traits.is_hudi_1:
        instant = data.timeline.new_instant_time()
    else:
        if any(i.timestamp <= latest for i in pending_data):
            return None
        instant = latest + "001"
    if tl.states_of(instant) or (last is not None and instant <= last.timestamp):
        return None
    return instant


def _plan(mdt: MetadataTable) -> CompactionPlan:
    """An operation per file slice with log files, in every MDT partition whose records TMS merges as Hudi does
    (another one's file groups keep their slices: a plan may leave file groups out)."""
    ops = []
    for part in mdt.partitions:
        if part not in K.MAINTAINED and not part.startswith(K.SECONDARY_INDEX_PREFIX):
            continue
        for fs in mdt.file_slices(part):
            if not fs.log_files:
                continue
            ops.append(CompactionOperation(
                base_instant_time=fs.base_instant, file_id=fs.file_id, partition_path=part,
                data_file_path=fs.base_file.file_name if fs.base_file else None,
                delta_file_paths=[lf.file_name for lf in fs.log_files],
                metrics={"TOTAL_LOG_FILES": float(len(fs.log_files)), "TOTAL_LOG_FILES_SIZE": float(fs.log_bytes)}))
    return CompactionPlan(operations=ops)


def _slices_of(mdt: MetadataTable, plan: CompactionPlan, instant: str) -> list[FileSlice]:
    """The file slice each operation names, checked first: a plan read from storage names file groups of the MDT's
    partitions and their own files, by name, or it is refused in one line before anything is written."""
    groups = {(fs.partition, fs.file_id) for part in mdt.partitions for fs in mdt.file_slices(part)}
    slices = []
    for op in plan.operations:
        part, fid = op.partition_path or "", op.file_id or ""
        if (part, fid) not in groups or op.base_instant_time is None:
            raise HudiError(f"metadata table compaction {instant} names file group {fid!r} in {part!r}, not one of "
                            "the metadata table's: nothing was written")
        base = None
        if op.data_file_path:
            name = BaseFileName.parse(op.data_file_path)
            if name is None or name.file_id != fid or "/" in op.data_file_path:
                raise HudiError(f"metadata table compaction {instant} names {op.data_file_path!r}, not a base file "
                                f"of {fid}: nothing was written")
            base = BaseFile(posixpath.join(part, op.data_file_path), 0, name)
        logs = []
        for rel in op.delta_file_paths:
            log_name = LogFileName.parse(rel)
            if log_name is None or log_name.file_id != fid or "/" in rel:
                raise HudiError(f"metadata table compaction {instant} names {rel!r}, not a log file of {fid}: "
                                "nothing was written")
            logs.append(LogFile(posixpath.join(part, rel), 0, log_name))
        slices.append(FileSlice(part, fid, op.base_instant_time, base, logs))
    return slices


def _execute(data: HudiTable, mdt: MetadataTable, requested: Instant) -> str:
    """Write the new base file of each operation of the plan at `requested` and complete the compaction."""
    tl = mdt.table.timeline
    plan = parse_compaction_plan(tl.read_plan(requested.timestamp))
    slices = _slices_of(mdt, plan, requested.timestamp)
    resumed = requested.state is not State.REQUESTED   # an earlier attempt may have written some files
    inflight = requested if resumed else tl.transition_to_inflight(requested)
    schema = schema_text(data.config.traits)
    storage = mdt.table.storage
    stats: dict[str, list[WriteStat]] = {}
    for index, fs in enumerate(slices):
        entries = _merged_entries(mdt, fs, schema)
        raw = write_hfile(entries, file_info={"schema": schema.encode()})
        rel = posixpath.join(fs.partition, f"{fs.file_id}_{write_token(index)}_{requested.timestamp}.hfile")
        if resumed:
            storage.delete(rel)
        storage.write_new(rel, raw)
        stats.setdefault(fs.partition, []).append(WriteStat(
            file_id=fs.file_id, path=rel, prev_commit=fs.base_instant, num_writes=len(entries),
            num_update_writes=len(entries), total_write_bytes=len(raw), partition_path=fs.partition,
            total_log_files_compacted=len(fs.log_files), file_size_in_bytes=len(raw)))
    meta = CommitMetadata(partition_to_write_stats=stats, compacted=True, extra_metadata={"schema": schema},
                          operation_type="COMPACT")
    tl.complete(inflight, serialize_commit_metadata(meta, mdt.table.config.version))
    log.info("compacted the metadata table of %s at %s: %d file group(s)", data.config.name, requested.timestamp,
             len(slices))
    return requested.timestamp


def _merged_entries(mdt: MetadataTable, fs: FileSlice, schema: str) -> list[tuple[str, bytes]]:
    """The new base file's entries (key, Avro record), sorted: the base file's records the log blocks did not touch
    copied as they are (when it was written with `schema`), the others merged as readers merge them."""
    changes = mdt.log_changes(fs)
    base: list[tuple[str, bytes]] = []
    base_schema = schema
    if fs.base_file is not None:
        h = read_hfile(mdt.table.storage.read_bytes(fs.base_file.path))
        base, base_schema = h.items(), h.file_info["schema"].decode()
    same = base_schema == schema or _canonical(base_schema) == _canonical(schema)
    entries = []
    for key, value in base:
        change = changes.pop(key, None)
        if change is None and same:
            entries.append((key, value))
            continue
        rec = decode_value(value, key, base_schema)
        merged = rec if change is None else change.over(rec)
        if merged is not None and not merged.is_deleted:
            entries.append((key, encode_record(merged, schema, blank_key=False)))
    for key, change in changes.items():   # keys the base file does not have
        merged = change.over(None)
        if merged is not None and not merged.is_deleted:
            entries.append((key, encode_record(merged, schema, blank_key=False)))
    entries.sort(key=lambda e: e[0])
    return entries


def _canonical(schema: str) -> str:
    return to_parsing_canonical_form(json.loads(schema))
