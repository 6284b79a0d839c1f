"""How the records of a table merge, decided from its `hoodie.properties`: the ordering fields (none under
commit-time ordering) and what marks a data record as a delete; or why TMS cannot merge them exactly, in one line.

Hudi 1.1 (table version 9) writes the semantics of the payload classes it retired into the table's
configuration (`HoodieTableConfig.inferMergingConfigsForV9TableCreation`): a merge mode, ordering fields, a
custom delete marker (`hoodie.record.merge.property.hoodie.payload.delete.field`/`.marker`, AWS DMS's
`Op = 'D'`, Debezium's `_change_operation_type = 'd'`) and a partial update mode (IGNORE_DEFAULTS for the
payloads whose null fields keep the older value, FILL_UNAVAILABLE for Postgres' toasted values). All four are
merged (`partial_merge` merges field by field). On table version 6 the partial payload classes keep their Hudi 0.15
semantics (`LegacyPartial`); on version 8, and Postgres' Debezium payload before version 9, they are refused."""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ..config import table as table_config
from ..errors import HudiError, UnsupportedTableError
from ..table.properties import MergeMode, TableConfig

IS_DELETED = "_hoodie_is_deleted"
_MERGE_PROPERTY = "hoodie.record.merge.property."
DELETE_FIELD = "hoodie.payload.delete.field"
DELETE_MARKER = "hoodie.payload.delete.marker"
PARTIAL_UPDATE_MODE = "hoodie.table.partial.update.mode"
UNAVAILABLE_VALUE = "hoodie.write.partial.update.unavailable.value"
_PAYLOAD_KEYS = ("hoodie.compaction.payload.class", "hoodie.legacy.payload.class")

_NON_DEFAULTS = "org.apache.hudi.common.model.OverwriteNonDefaultsWithLatestAvroPayload"
_PARTIAL_UPDATE = "org.apache.hudi.common.model.PartialUpdateAvroPayload"
_POSTGRES = "org.apache.hudi.common.model.debezium.PostgresDebeziumAvroPayload"
# Payloads whose merge keeps the older value of the fields a later record leaves null (or Debezium-unavailable).
_PARTIAL_PAYLOADS = {_NON_DEFAULTS, _PARTIAL_UPDATE, _POSTGRES}


class PartialMode(StrEnum):
    """Which fields of the winning record take the value of the record it merges with (Hudi's PartialUpdateMode):
    IGNORE_DEFAULTS those holding their default (null: TMS refuses other defaults), FILL_UNAVAILABLE the text and
    bytes fields holding the unavailable value. KEEP_VALUES is no table's mode: a file slice with Hudi 1.1's
    partial-update blocks merges so, the fields a record lacks (its block's schema has not them) taking the other's."""
    IGNORE_DEFAULTS = "IGNORE_DEFAULTS"
    FILL_UNAVAILABLE = "FILL_UNAVAILABLE"
    KEEP_VALUES = "KEEP_VALUES"


_TABLE_PARTIAL_MODES = (PartialMode.IGNORE_DEFAULTS.value, PartialMode.FILL_UNAVAILABLE.value)


class LegacyPartial(StrEnum):
    """A partial payload class merged as Hudi 0.15 does (table version 6). OVERWRITE_NON_DEFAULTS: the log is folded
    whole by ordering value (the payload's preCombine), the winner's null fields take the base row's values.
    PARTIAL_UPDATE: log records merge field by field too, the record of the greater ordering value first, and the
    meta fields come from the record written last; a log that deletes (other than by a natural delete) is refused."""
    OVERWRITE_NON_DEFAULTS = "OVERWRITE_NON_DEFAULTS"
    PARTIAL_UPDATE = "PARTIAL_UPDATE"


@dataclass(frozen=True)
class MergeRules:
    """How records of one key merge. `ordering` empty: the last write wins (commit-time ordering); else the
    write with the greatest ordering value, the fields compared in order (Hudi's ArrayComparable), ties to the
    later write. A data record is a delete when its `_hoodie_is_deleted` is true or its `delete_field` holds
    `delete_marker` (compared as text). `base_loses`: the log's winner replaces the base row whatever the
    ordering values (Hudi 0.x under commit-time ordering: the log alone is folded by ordering value).
    `partial_blocks`: Hudi 1.1's partial-update log blocks merge under these rules (table version 9; see
    `partial_merge.keep_values`). `partial_from`: under KEEP_VALUES, the write position of the slice's first
    partial-update block, from which Hudi's record buffer merges partially."""
    ordering: tuple[str, ...] = ()
    delete_field: str | None = None
    delete_marker: str | None = None
    base_loses: bool = False
    partial: PartialMode | None = None
    unavailable_value: str | None = None
    legacy_partial: LegacyPartial | None = None
    key_fields: tuple[str, ...] = ()  # virtual keys: records are merged by the key these fields make (`record_keys`)
    partial_blocks: bool = True
    partial_from: int = 0

    @classmethod
    def of(cls, ordering: str | list[str] | tuple[str, ...] | None, delete_field: str | None = None,
           delete_marker: str | None = None) -> MergeRules:
        fields = (ordering,) if isinstance(ordering, str) else tuple(ordering or ())
        return cls(fields, delete_field, delete_marker)


def _merge_property(config: TableConfig, key: str) -> str | None:
    return config.get(_MERGE_PROPERTY + key) or config.get(key) or None


def _legacy_payload(config: TableConfig) -> str | None:
    """The partial payload class of a table before version 9 (version 9 writes its semantics as properties)."""
    payload = table_config.PAYLOAD_CLASS.value(config.props)
    return payload if payload in _PARTIAL_PAYLOADS and config.version < 9 else None


def virtual_keys_refusal(config: TableConfig) -> str:
    """Why TMS cannot derive the keys the log records of a table without meta fields merge by; empty if it can (or
    the table has meta fields). Hudi 1.1 (table version 9) derives a key from the record key fields (one: its
    value; several: `field:value` joined by commas, as KeyGenerator.constructRecordKey); Hudi 0.15 (version 6)
    from one record key field only."""
    if config.populate_meta_fields or not config.is_mor:
        return ""
    fields = config.record_key_fields
    if not fields:
        return "it does not populate meta fields (virtual keys) and names no record key fields"
    if config.version == 8 or (config.version == 6 and len(fields) > 1):
        return (f"it does not populate meta fields (virtual keys) on table version {config.version} with record "
                f"key fields {','.join(fields)}: TMS derives the keys of virtual-key MERGE_ON_READ tables on version "
                "9, and on version 6 from one record key field")
    return ""


def merge_refusal(config: TableConfig) -> str:
    """Why TMS cannot merge the table's records exactly (`virtual_keys_refusal` aside); empty if it can."""
    legacy = _legacy_payload(config)
    if legacy:
        name = legacy.rsplit(".", 1)[-1]
        if config.version != 6:
            return f"it uses payload {name} on table version {config.version}; TMS merges it on versions 6 and 9"
        if legacy == _POSTGRES:
            return f"it uses payload {name} on table version 6; TMS merges its toasted values on version 9 only"
        if legacy == _PARTIAL_UPDATE and not config.ordering_fields:
            return f"it uses payload {name} without a precombine field; TMS merges it by ordering value only"
    else:
        try:
            mode = config.merge_mode
        except HudiError as e:
            return str(e)
        if mode is MergeMode.CUSTOM:
            merger = config.custom_merger()
            return f"it uses merge mode CUSTOM, which needs a Java merger (payload {merger})"
    partial = (config.get(PARTIAL_UPDATE_MODE) or "").upper()
    if partial and partial != "NONE":
        if partial not in _TABLE_PARTIAL_MODES:
            return f"it uses partial update mode {partial} ({PARTIAL_UPDATE_MODE}), which TMS does not know"
        if partial == PartialMode.FILL_UNAVAILABLE and not _merge_property(config, UNAVAILABLE_VALUE):
            return f"it uses partial update mode FILL_UNAVAILABLE without {_MERGE_PROPERTY}{UNAVAILABLE_VALUE}"
    elif config.version >= 9 and table_config.LEGACY_PAYLOAD_CLASS.value(config.props) in _PARTIAL_PAYLOADS:
        return (f"it was created with payload {table_config.LEGACY_PAYLOAD_CLASS.value(config.props)} but sets no "
                f"{PARTIAL_UPDATE_MODE}, which Hudi 1.1 infers for it")
    field, marker = _merge_property(config, DELETE_FIELD), _merge_property(config, DELETE_MARKER)
    if bool(field) != bool(marker):
        return f"it sets only one of {DELETE_FIELD} and {DELETE_MARKER} (Hudi needs both)"
    return ""


def merge_rules(config: TableConfig) -> MergeRules:
    """The table's merge rules; UnsupportedTableError (one line) when TMS cannot merge its records exactly."""
    reason = merge_refusal(config) or virtual_keys_refusal(config)
    if reason:
        raise UnsupportedTableError(f"TMS cannot merge the records of table {config.name}: {reason}")
    delete_field, delete_marker = _merge_property(config, DELETE_FIELD), _merge_property(config, DELETE_MARKER)
    keys = () if config.populate_meta_fields else tuple(config.record_key_fields)
    blocks = config.version == 9  # the partial-update blocks of Hudi 1.0 (version 8) are not checked against Java
    legacy = _legacy_payload(config)
    if legacy == _PARTIAL_UPDATE:  # preCombine and combineAndGetUpdateValue compare ordering values
        return MergeRules(tuple(config.ordering_fields), delete_field, delete_marker,
                          partial=PartialMode.IGNORE_DEFAULTS, legacy_partial=LegacyPartial.PARTIAL_UPDATE,
                          key_fields=keys, partial_blocks=blocks)
    ordering = tuple(config.ordering_fields) if config.merge_mode is MergeMode.EVENT_TIME_ORDERING else ()
    base_loses = False
    precombined = config.traits.payload_precombines_log_records
    if precombined and not ordering and config.ordering_fields:
        ordering, base_loses = tuple(config.ordering_fields), True
    mode = (config.get(PARTIAL_UPDATE_MODE) or "").upper()
    partial = PartialMode(mode) if mode in _TABLE_PARTIAL_MODES else None
    if legacy == _NON_DEFAULTS:
        return MergeRules(ordering, delete_field, delete_marker, base_loses, PartialMode.IGNORE_DEFAULTS,
                          legacy_partial=LegacyPartial.OVERWRITE_NON_DEFAULTS, key_fields=keys,
                          partial_blocks=blocks)
    unavailable = _merge_property(config, UNAVAILABLE_VALUE) if partial is PartialMode.FILL_UNAVAILABLE else None
    return MergeRules(ordering, delete_field, delete_marker, base_loses, partial, unavailable, key_fields=keys,
                      partial_blocks=blocks)
