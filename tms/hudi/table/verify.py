"""`tms verify`: a table's consistency, every difference found.

- the files the retained commits wrote (those the table still needs) against storage: each one there, a base
  file with the size its commit recorded, a log file not empty and not shorter than its writer recorded
  (tms.hudi.table.lost_files);
- the metadata table's file listing against storage and the timeline (files of completed instants);
- its column statistics against the base files' parquet footers (and entries of files that are gone);
- its record index against the records a snapshot read finds (key set and file group of each);
- each secondary index on a column TMS renders as Hudi does against the (secondary key, record key) of the
  records a snapshot read finds, and each key in the file group it routes to;
- pending instants whose writer has no live heartbeat (a crashed write waiting for a rollback), and MDT
  instants left pending;
- files that no instant accounts for (neither completed nor pending): leftovers of failed writes, said to be
  orphans when older than a safety window (tms.hudi.table.orphans);
- the record-key bloom filter in each latest base file's footer against the file's keys (a key the filter
  misses makes Hudi's BLOOM index write it twice)."""
from __future__ import annotations

import posixpath
import time
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..config import table as table_config
from ..errors import HudiError, UnsupportedTableError
from ..fs_view.file_names import LogFileName
from ..metadata import keys as K
from ..metadata.listing import committed_files
from ..metadata.reader import MetadataTable
from ..metadata.secondary import secondary_index, supported_column_type
from ..metadata.writer import _footer_column_stats
from ..records.bloom import FOOTER_KEY, keys_not_contained
from ..records.reader import read_snapshot
from ..timeline.instant import Action, State
from ..timeline.serde import parse_requested_replace_metadata
from .hudi_table import HudiTable
from .lost_files import DamagedFilesError, damaged_files
from .orphans import find_orphans, unreferenced_files

HEARTBEAT_DIR = ".hoodie/.heartbeat"
# Hudi's default heartbeat expiry: hoodie.client.heartbeat.interval_in_ms (60 s) x tolerable misses (2).
HEARTBEAT_EXPIRY_SECONDS = 120.0
_WRITES = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)


@dataclass(frozen=True)
class Problem:
    check: str      # lost_file | mdt_listing | column_stats | record_index | secondary_index | heartbeat
    #                 | unreferenced_file | bloom_filter | unreadable_file
    where: str      # a partition, file or instant
    detail: str

    def line(self) -> str:
        return f"{self.check}: {self.where}: {self.detail}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# A committed file that cannot be read (truncated, corrupt, not Parquet, or missing where the records are read) is
# a problem to report, not a crash.
_UNREADABLE = (pa.ArrowException, OSError, EOFError, DamagedFilesError)


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]


def _unreadable(rel: str, e: BaseException) -> Problem:
    return Problem("unreadable_file", rel, f"a committed file that cannot be read: {_first_line(e)}")


def verify_table(table: HudiTable, *, now: float | None = None,
                 orphan_safety_seconds: float = 24 * 3600) -> list[Problem]:
    """Every difference found. An unreferenced file older than `orphan_safety_seconds` (and written after the
    active timeline's first instant) is said to be an orphan (tms.hudi.table.orphans)."""
    fmt = table_config.BASE_FILE_FORMAT.value(table.config.props).upper()
    if fmt != "PARQUET":
        raise UnsupportedTableError(f"tms verify reads parquet base files; table {table.config.name} has {fmt}")
    now = time.time() if now is None else now
    problems: list[Problem] = [Problem("lost_file", d.path, d.detail) for d in damaged_files(table)]
    problems += _pending_without_heartbeat(table, now)
    orphans = {o.path for o in find_orphans(table, now=now, safety_seconds=orphan_safety_seconds)}
    problems += _unreferenced_files(table, orphans, orphan_safety_seconds)
    problems += _footer_bloom_filters(table)
    mdt = MetadataTable.open(table)
    if mdt is not None:
        problems += _mdt_pending(mdt)
        problems += _mdt_listing(table, mdt)
        if K.COLUMN_STATS in mdt.partitions:
            problems += _column_stats(table, mdt)
        if K.RECORD_INDEX in mdt.partitions:
            problems += _record_index(table, mdt)
        if K.BLOOM_FILTERS in mdt.partitions:
            problems += _bloom_filters(mdt)
        for partition in mdt.partitions:
            if partition.startswith(K.SECONDARY_INDEX_PREFIX):
                problems += _secondary_index(table, mdt, partition)
    return problems


# --- heartbeats and leftovers ----------------------------------------------------------------------

def _pending_without_heartbeat(table: HudiTable, now: float) -> list[Problem]:
    out = []
    beats = {i.name: i.mtime for i in table.storage.listdir(HEARTBEAT_DIR)}
    for inst in table.timeline.pending(_WRITES):
        if inst.action == Action.REPLACE_COMMIT and _is_clustering(table, inst.timestamp):
            continue  # a clustering plan, not a write
        beat = beats.get(inst.timestamp)
        if beat is None:
            out.append(Problem("heartbeat", inst.timestamp,
                               f"{inst.action} is {inst.state.name.lower()} and has no heartbeat: a failed write "
                               "waiting to be rolled back"))
        elif beat is not None and now - beat > HEARTBEAT_EXPIRY_SECONDS:
            out.append(Problem("heartbeat", inst.timestamp,
                               f"{inst.action} is {inst.state.name.lower()} and its heartbeat is "
                               f"{now - beat:.0f} s old: a failed write waiting to be rolled back"))
    return out


def _is_clustering(table: HudiTable, ts: str) -> bool:
    states = table.timeline.states_of(ts)
    if State.REQUESTED not in states:
        return False
    plan = table.timeline.read_plan(ts)
    return bool(plan) and parse_requested_replace_metadata(plan).clustering_plan is not None


def _unreferenced_files(table: HudiTable, orphans: set[str], safety_seconds: float) -> list[Problem]:
    """Data files whose instant is neither completed nor pending on the timeline; `orphans`: those of them
    that are orphans (older than the safety window)."""
    out = []
    for e, ts in unreferenced_files(table):
        orphan = (f"; an orphan (older than the {safety_seconds / 3600:g} h safety window)" if e.path in orphans
                  else "")
        out.append(Problem("unreferenced_file", e.path, f"written by instant {ts}, which the timeline does "
                                                        f"not have (a failed write's leftover){orphan}"))
    return out


def _footer_bloom_filters(table: HudiTable) -> list[Problem]:
    """Every record key of a latest base file is in the bloom filter of its footer."""
    if not table.config.populate_meta_fields:
        return []   # no record-key column, and Java writes no filter
    out = []
    for sl in table.file_system_view().latest_slices():
        if sl.base_file is None:
            continue
        try:
            with table.storage.open(sl.base_file.path) as fh:
                pf = pq.ParquetFile(fh)
                serialized = (pf.metadata.metadata or {}).get(FOOTER_KEY)
                if serialized is None:
                    continue
                keys = pf.read(columns=["_hoodie_record_key"]).column(0).combine_chunks()
        except _UNREADABLE as e:
            out.append(_unreadable(sl.base_file.path, e))
            continue
        missing = keys_not_contained(serialized, keys)
        if len(missing):
            out.append(Problem("bloom_filter", sl.base_file.path,
                               f"{len(missing)} of {len(keys)} record keys missing from the footer's bloom filter "
                               f"(e.g. {keys[int(missing[0])].as_py()!r}): Hudi's BLOOM index would write them twice"))
    return out


# --- the metadata table ----------------------------------------------------------------------------

def _mdt_pending(mdt: MetadataTable) -> list[Problem]:
    out = []
    data_pending = {i.timestamp for i in mdt.data.timeline.pending()}
    for inst in mdt.table.timeline.pending():
        if inst.timestamp not in data_pending:
            out.append(Problem("heartbeat", f"metadata/{inst.timestamp}",
                               f"metadata table {inst.action} is {inst.state.name.lower()} while the data table "
                               "has no pending instant of that time: an attempt left it behind"))
    for part in mdt.partitions:
        for e in mdt.table.storage.listdir(part):
            name = LogFileName.parse(e.name)
            if (name and mdt.table.config.traits.log_files_named_by_writer
                    and not mdt.table.timeline.states_of(name.instant)):
                out.append(Problem("unreferenced_file", f".hoodie/metadata/{e.path}",
                                   f"metadata log file of instant {name.instant}, which the metadata timeline "
                                   "does not have"))
    return out


def _mdt_listing(table: HudiTable, mdt: MetadataTable) -> list[Problem]:
    out = []
    listed = mdt.file_listing()
    stored = committed_files(table)
    for part in sorted(set(listed) | set(stored)):
        if part not in stored:
            out.append(Problem("mdt_listing", part or "(root)",
                               "partition listed by the metadata table is not on storage"))
            continue
        if part not in listed:
            out.append(Problem("mdt_listing", part or "(root)",
                               "partition on storage is not listed by the metadata table"))
            continue
        a, b = listed[part], stored[part]
        for name in sorted(set(a) - set(b)):
            out.append(Problem("mdt_listing", posixpath.join(part, name),
                               "listed by the metadata table, not on storage"))
        for name in sorted(set(b) - set(a)):
            out.append(Problem("mdt_listing", posixpath.join(part, name),
                               "on storage (written by a completed instant), not listed by the metadata table"))
        for name in sorted(set(a) & set(b)):
            if a[name] != b[name] and not LogFileName.parse(name):
                out.append(Problem("mdt_listing", posixpath.join(part, name),
                                   f"metadata table says {a[name]} bytes, storage {b[name]}"))
    return out


def _unwrap(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, tuple):
        v = v[1]
    return v.get("value") if isinstance(v, dict) else v


def _column_stats(table: HudiTable, mdt: MetadataTable) -> list[Problem]:
    out = []
    stats = mdt.records(K.COLUMN_STATS)
    listing = mdt.file_listing()
    v2 = table.config.traits.metadata_records_v2
    # A record without its payload is reported below, with the statistics of files that are gone.
    columns = sorted({cs["columnName"] for r in stats.values() if (cs := r.column_stats) is not None})
    expected_keys = set()
    stored = committed_files(table)
    for part, files in listing.items():
        for name in sorted(files):
            if not name.endswith(".parquet") or name not in stored.get(part, {}):
                continue   # a listed file storage lacks is a listing difference, reported there
            rel = posixpath.join(part, name) if part else name
            try:
                with table.storage.open(rel) as fh:
                    pf = pq.ParquetFile(fh)
            except _UNREADABLE as e:
                out.append(_unreadable(rel, e))
                continue
            footer = _footer_column_stats(pf.metadata, pf.schema_arrow, name, columns, v2)
            for col, want in footer.items():
                key = K.column_stats_key(part, name, col)
                expected_keys.add(key)
                rec = stats.get(key)
                if rec is None:
                    out.append(Problem("column_stats", f"{rel}:{col}", "no column statistics in the metadata table"))
                    continue
                got = rec.column_stats
                if got is None:
                    continue   # reported below
                for f in ("valueCount", "nullCount"):
                    if got.get(f) != want[f]:
                        out.append(Problem("column_stats", f"{rel}:{col}",
                                           f"{f} is {got.get(f)}, the footer says {want[f]}"))
                for f in ("minValue", "maxValue"):
                    if _unwrap(got.get(f)) != _unwrap(want[f]):
                        out.append(Problem("column_stats", f"{rel}:{col}",
                                           f"{f} is {_unwrap(got.get(f))!r}, the footer says {_unwrap(want[f])!r}"))
    live_files = {(p, n) for p, files in listing.items() for n in files}
    for key, rec in stats.items():
        cs = rec.column_stats
        if cs is None:
            out.append(Problem("column_stats", key, "a column_stats record without column statistics"))
            continue
        if cs["fileName"].endswith(".parquet") and key not in expected_keys:
            if not any(key == K.column_stats_key(p, cs["fileName"], cs["columnName"])
                       for p in listing if (p, cs["fileName"]) in live_files):
                out.append(Problem("column_stats", f"{cs['fileName']}:{cs['columnName']}",
                                   "statistics of a file the table no longer has"))
    return out


def _record_index(table: HudiTable, mdt: MetadataTable) -> list[Problem]:
    out = []
    index = mdt.records(K.RECORD_INDEX)
    try:
        snap = read_snapshot(table, columns=["_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name"])
    except _UNREADABLE as e:
        return [Problem("record_index", table.config.name, f"the records cannot be read to check the index: "
                                                            f"{_first_line(e)}")]
    seen = set()
    for row in snap.to_pylist():
        key = row["_hoodie_record_key"]
        seen.add(key)
        rec = index.get(key)
        if rec is None:
            out.append(Problem("record_index", key, "record not in the record index"))
            continue
        loc = rec.location
        if loc is None:
            out.append(Problem("record_index", key, "a record index entry without a record location"))
            continue
        fid = row["_hoodie_file_name"].lstrip(".")
        if loc.partition != row["_hoodie_partition_path"] or not fid.startswith(loc.file_id):
            out.append(Problem("record_index", key, f"indexed in {loc.partition}/{loc.file_id}, found in "
                                                    f"{row['_hoodie_partition_path']}/{row['_hoodie_file_name']}"))
    for key in sorted(set(index) - seen):
        out.append(Problem("record_index", key, "indexed, but no such record"))
    return out


def _secondary_index(table: HudiTable, mdt: MetadataTable, partition: str) -> list[Problem]:
    """The index holds the key of each live record (Hudi 1.0 indexes no null value) and nothing else, each key in
    its file group. An index on a column whose values TMS does not render as Hudi does is not checked."""
    try:
        si = secondary_index(table, partition)
    except UnsupportedTableError:
        return []
    except HudiError:
        return [Problem("secondary_index", partition, "a secondary-index partition the table does not define")]
    try:
        snap = read_snapshot(table, columns=["_hoodie_record_key", si.column])
    except _UNREADABLE as e:
        return [Problem("secondary_index", partition, f"the records cannot be read to check the index: "
                                                      f"{_first_line(e)}")]
    if si.column not in snap.column_names or not supported_column_type(snap.schema.field(si.column).type):
        return []
    try:
        wanted = {k for k in (si.key(v, rk) for v, rk in zip(snap.column(si.column).to_pylist(),
                                                            snap.column("_hoodie_record_key").to_pylist(),
                                                            strict=True)) if k is not None}
    except UnsupportedTableError:
        return []
    index = mdt.records(partition)
    out = [Problem("secondary_index", f"{partition}:{k}", "record not in the secondary index")
           for k in sorted(wanted - set(index))]
    out += [Problem("secondary_index", f"{partition}:{k}", "indexed, but no such record")
            for k in sorted(set(index) - wanted)]
    slices = mdt.file_slices(partition)
    for fs in slices:
        group = K.file_group_index_of(fs.file_id)
        for key in mdt.slice_records(fs):
            if si.file_group(key, len(slices)) != group:
                out.append(Problem("secondary_index", f"{partition}:{key}",
                                   f"in file group {fs.file_id}, which its key does not route to"))
    return out


def _bloom_filters(mdt: MetadataTable) -> list[Problem]:
    """Every base file the MDT lists has its bloom filter entry, and no entry outlives its file."""
    out = []
    blooms = mdt.records(K.BLOOM_FILTERS)
    wanted = {}
    for part, files in mdt.file_listing().items():
        for name in files:
            if name.endswith(".parquet"):
                wanted[K.bloom_filter_key(part, name)] = posixpath.join(part, name) if part else name
    for key, rel in sorted(wanted.items(), key=lambda kv: kv[1]):
        if key not in blooms:
            out.append(Problem("bloom_filters", rel, "no bloom filter entry in the metadata table"))
    for key in sorted(set(blooms) - set(wanted)):
        out.append(Problem("bloom_filters", key, "bloom filter entry of a file the table no longer lists"))
    return out
