"""`.hoodie/hoodie.properties`: Java properties syntax, and the table configuration it holds."""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from enum import StrEnum

from ..config import table as table_config
from ..errors import HudiError, UnsupportedTableError
from ..timeline.zone import timeline_zone
from .version_traits import SUPPORTED_VERSIONS, TableVersionTraits

EVENT_TIME_STRATEGY_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT_TIME_STRATEGY_ID = "ce9acb64-bde0-424c-9b91-f6ebba25356d"

# Payload classes Hudi resolves to one of the two built-in merge modes (OverwriteNonDefaultsWithLatestAvroPayload
# with a partial merge besides, which `records.merge_rules` adds).
_EVENT_TIME_PAYLOADS = {
    "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
    "org.apache.hudi.common.model.EventTimeAvroPayload",
}
_COMMIT_TIME_PAYLOADS = {
    "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
    "org.apache.hudi.common.model.OverwriteNonDefaultsWithLatestAvroPayload",
}


class TableType(StrEnum):
    COPY_ON_WRITE = "COPY_ON_WRITE"
    MERGE_ON_READ = "MERGE_ON_READ"


class MergeMode(StrEnum):
    EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
    COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
    CUSTOM = "CUSTOM"


# --- Java properties syntax -------------------------------------------------------------------

def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 5 < len(text):
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java `.properties` text (comments, `=`/`:` separators, backslash escapes, continuations)."""
    props: dict[str, str] = {}
    logical, pending = [], ""
    for raw in text.splitlines():
        line = pending + raw.lstrip() if pending else raw.lstrip()
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of trailing backslashes continues the line
            pending = line[:-1]
            continue
        pending = ""
        logical.append(line)
    if pending:
        logical.append(pending)
    for line in logical:
        if not line or line[0] in "#!":
            continue
        i = 0
        while i < len(line) and line[i] not in "=: \t":
            i += 2 if line[i] == "\\" else 1
        key = line[:i]
        rest = line[i:].lstrip(" \t")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t")
        props[_unescape(key)] = _unescape(rest)
    return props


def _escape(text: str, is_key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch in "\\=:#!":
            out.append("\\" + ch)
        elif ch == " " and (is_key or i == 0):
            out.append("\\ ")
        elif ch in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[ch])
        elif ord(ch) > 0x7E or ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def format_properties(props: dict[str, str], comment: str | None = None) -> str:
    now = datetime.now(UTC)
    lines = [f"#{comment or 'Updated at ' + now.isoformat().replace('+00:00', 'Z')}",
             f"#{now.strftime('%a %b %d %H:%M:%S UTC %Y')}"]
    lines += [f"{_escape(k, True)}={_escape(v, False)}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


def table_checksum(database: str, table_name: str) -> int:
    """`hoodie.table.checksum`: CRC32 of "<database>.<table>" (matched on every fixture)."""
    return zlib.crc32(f"{database}.{table_name}".encode())


# --- table configuration ----------------------------------------------------------------------

@dataclass
class TableConfig:
    """The table's `hoodie.properties`, with typed accessors for what TMS needs."""

    props: dict[str, str] = field(default_factory=dict)
    # The zone of LOCAL timelines, as the library's caller passes it (HudiContext.local_zone; None: this host's).
    local_zone: tzinfo | None = field(default=None, compare=False)

    @classmethod
    def from_text(cls, text: str, local_zone: tzinfo | None = None) -> TableConfig:
        cfg = cls(parse_properties(text), local_zone)
        cfg.validate()
        return cfg

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.props.get(key, default)

    def validate(self) -> None:
        for option in table_config.REQUIRED:
            if option.value(self.props) is None:
                raise HudiError(f"hoodie.properties lacks required property {option.key}")
        table_type = self.props[table_config.TABLE_TYPE.key]
        try:
            TableType(table_type)
        except ValueError:
            raise HudiError(f"unknown {table_config.TABLE_TYPE.key} {table_type!r}") from None
        try:
            version = int(self.props[table_config.TABLE_VERSION.key])
        except ValueError:
            raise HudiError(f"bad {table_config.TABLE_VERSION.key} "
                            f"{self.props[table_config.TABLE_VERSION.key]!r}") from None
        if version not in SUPPORTED_VERSIONS:
            raise UnsupportedTableError(
                f"table version {version} is not supported (supported: {', '.join(map(str, SUPPORTED_VERSIONS))})")

    @property
    def name(self) -> str:
        return self.props[table_config.TABLE_NAME.key]

    @property
    def database(self) -> str:
        return table_config.DATABASE_NAME.value(self.props)

    @property
    def table_type(self) -> TableType:
        return TableType(self.props[table_config.TABLE_TYPE.key])

    @property
    def is_mor(self) -> bool:
        return self.table_type is TableType.MERGE_ON_READ

    @property
    def version(self) -> int:
        return int(self.props[table_config.TABLE_VERSION.key])

    @property
    def traits(self) -> TableVersionTraits:
        """What the table's version means for its files (see TableVersionTraits)."""
        return TableVersionTraits(self.version)

    @property
    def timeline_dir(self) -> str:
        """Timeline folder relative to the base path."""
        if self.traits.timeline_folder_of_its_own:
            return ".hoodie/" + table_config.TIMELINE_PATH.value(self.props)
        return ".hoodie"

    @property
    def archive_dir(self) -> str:
        """Table version 6: the archived timeline's folder (`hoodie.archivelog.folder`) relative to the base path."""
        return ".hoodie/" + table_config.ARCHIVELOG_FOLDER.value(self.props)

    @property
    def timeline_zone(self) -> tzinfo:
        """The zone the table's instant times are wall-clock times in (see timeline_zone)."""
        return timeline_zone(self.props, self.local_zone)

    @property
    def record_key_fields(self) -> list[str]:
        return list(table_config.RECORD_KEY_FIELDS.value(self.props))

    @property
    def partition_fields(self) -> list[str]:
        # v8 may suffix fields with the key-generator part type, e.g. "city:SIMPLE".
        return [f.split(":")[0] for f in table_config.PARTITION_FIELDS.value(self.props)]

    @property
    def ordering_fields(self) -> list[str]:
        return list(table_config.ORDERING_FIELDS.value(self.props))

    @property
    def hive_style_partitioning(self) -> bool:
        return table_config.HIVE_STYLE_PARTITIONING.value(self.props)

    @property
    def populate_meta_fields(self) -> bool:
        return table_config.POPULATE_META_FIELDS.value(self.props)

    @property
    def create_schema(self) -> str | None:
        return table_config.CREATE_SCHEMA.value(self.props)

    def custom_merger(self) -> str | None:
        return table_config.PAYLOAD_CLASS.value(self.props) or table_config.RECORD_MERGE_STRATEGY_ID.value(self.props)

    @property
    def merge_mode(self) -> MergeMode:
        """Merge mode as Hudi resolves it: explicit mode, else payload class, else strategy id."""
        mode = table_config.RECORD_MERGE_MODE.value(self.props)
        if mode:
            try:
                return MergeMode(mode)
            except ValueError:
                raise HudiError(f"unknown hoodie.record.merge.mode {mode!r}") from None
        payload = table_config.PAYLOAD_CLASS.value(self.props)
        if payload in _EVENT_TIME_PAYLOADS:
            return MergeMode.EVENT_TIME_ORDERING
        if payload in _COMMIT_TIME_PAYLOADS:
            return MergeMode.COMMIT_TIME_ORDERING
        if payload:
            return MergeMode.CUSTOM
        strategy = table_config.RECORD_MERGE_STRATEGY_ID.value(self.props)
        if strategy == COMMIT_TIME_STRATEGY_ID:
            return MergeMode.COMMIT_TIME_ORDERING
        if strategy == EVENT_TIME_STRATEGY_ID:
            return MergeMode.EVENT_TIME_ORDERING
        if strategy is None:
            # Defaults: Hudi 0.x's payload (OverwriteWithLatestAvroPayload) merges by commit time;
            # Hudi 1.x merges by event time when the table has an ordering field.
            if self.traits.event_time_ordering_by_default and self.ordering_fields:
                return MergeMode.EVENT_TIME_ORDERING
            return MergeMode.COMMIT_TIME_ORDERING
        return MergeMode.CUSTOM

    def require_builtin_merge(self) -> MergeMode:
        mode = self.merge_mode
        if mode is MergeMode.CUSTOM:
            raise UnsupportedTableError(
                f"table {self.name} uses merge mode CUSTOM (payload {self.custom_merger()}),"
                " which needs a Java merger; TMS only merges EVENT_TIME_ORDERING and COMMIT_TIME_ORDERING")
        return mode


def new_table_properties(*, name: str, table_type: TableType | str, version: int, record_key: list[str],
                         ordering: list[str], partition: list[str], schema_json: str | None,
                         merge_mode: MergeMode | str | None = None, database: str = "default",
                         hive_style: bool = True, urlencode: bool = False, partition_time_format: str | None = None,
                         base_file_format: str = "PARQUET") -> dict[str, str]:
    """The properties a Java writer of the given table version puts into a new table. `partition_time_format`
    (a Java date pattern such as `yyyy/MM/dd/HH`) makes the one partition field, epoch milliseconds, a
    time-based key generator's; LANCE base files need version 9 (Hudi 1.1)."""
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedTableError(f"cannot create tables of version {version} (6, 8 or 9)")
    traits = TableVersionTraits(version)
    base_file_format = base_file_format.upper()
    if base_file_format not in ("PARQUET", "LANCE"):
        raise UnsupportedTableError(f"cannot create tables with {base_file_format} base files (PARQUET or LANCE)")
    if base_file_format == "LANCE" and not traits.lance_base_files:
        raise UnsupportedTableError("Lance base files need table version 9 (Hudi 1.1)")
    if partition_time_format and len(partition) != 1:
        raise UnsupportedTableError("a time-based partition format takes exactly one partition field")
    table_type = TableType(table_type)
    mode = MergeMode(merge_mode) if merge_mode else (
        MergeMode.EVENT_TIME_ORDERING if ordering else MergeMode.COMMIT_TIME_ORDERING)
    if mode is MergeMode.CUSTOM:
        raise UnsupportedTableError("cannot create a table with merge mode CUSTOM")
    props = {
        "hoodie.table.name": name,
        "hoodie.database.name": database,
        "hoodie.table.type": table_type.value,
        "hoodie.table.version": str(version),
        "hoodie.timeline.layout.version": traits.timeline_layout_version,
        "hoodie.table.recordkey.fields": ",".join(record_key),
        "hoodie.table.base.file.format": base_file_format,
        "hoodie.populate.meta.fields": "true",
        "hoodie.archivelog.folder": "archived",
        "hoodie.datasource.write.hive_style_partitioning": "true" if hive_style else "false",
        "hoodie.datasource.write.partitionpath.urlencode": "true" if urlencode else "false",
        "hoodie.datasource.write.drop.partition.columns": "false",
    }
    if ordering:
        props[traits.ordering_fields_property] = ",".join(ordering)
    hudi_1 = traits.is_hudi_1  # Hudi 1.x names key generators by type, Hudi 0.x by class
    keygen_key = "hoodie.table.keygenerator.type" if hudi_1 else "hoodie.table.keygenerator.class"
    if partition and partition_time_format:
        props["hoodie.table.partition.fields"] = partition[0]
        props[keygen_key] = "TIMESTAMP" if hudi_1 else "org.apache.hudi.keygen.TimestampBasedKeyGenerator"
        props["hoodie.keygen.timebased.timestamp.type"] = "EPOCHMILLISECONDS"
        props["hoodie.keygen.timebased.output.dateformat"] = partition_time_format
        props["hoodie.keygen.timebased.timezone"] = "UTC"
    elif partition:
        props["hoodie.table.partition.fields"] = ",".join(partition)
        props[keygen_key] = "SIMPLE" if hudi_1 else "org.apache.hudi.keygen.SimpleKeyGenerator"
    else:
        props[keygen_key] = "NON_PARTITION" if hudi_1 else "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
    if schema_json:
        props["hoodie.table.create.schema"] = schema_json
    strategy = EVENT_TIME_STRATEGY_ID if mode is MergeMode.EVENT_TIME_ORDERING else COMMIT_TIME_STRATEGY_ID
    if not hudi_1:
        props["hoodie.compaction.payload.class"] = (
            "org.apache.hudi.common.model.DefaultHoodieRecordPayload" if mode is MergeMode.EVENT_TIME_ORDERING
            else "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload")
        props["hoodie.compaction.record.merger.strategy"] = strategy
    else:
        props["hoodie.table.initial.version"] = str(version)
        props["hoodie.timeline.path"] = "timeline"
        props["hoodie.timeline.history.path"] = "history"
        props["hoodie.record.merge.mode"] = mode.value
        if not traits.merge_mode_implies_strategy:
            props["hoodie.record.merge.strategy.id"] = strategy
        else:
            props["hoodie.table.format"] = "native"
    props["hoodie.table.checksum"] = str(table_checksum(database, name))
    return props
