"""How the records of a table merge, decided from its `hoodie.properties`: the ordering fields (none under
commit-time ordering) and what marks a data record as a delete; or why TMS cannot merge them exactly, in one line.

Hudi 1.1 (table version 9) writes the semantics of the payload classes it retired into the table's
configuration (`HoodieTableConfig.inferMergingConfigsForV9TableCreation`): a merge mode, ordering fields, a
custom delete marker (`hoodie.record.merge.property.hoodie.payload.delete.field`/`.marker`, AWS DMS's
`Op = 'D'`, Debezium's `_change_operation_type = 'd'`) and a partial update mode (IGNORE_DEFAULTS for the
payloads whose null fields keep the older value, FILL_UNAVAILABLE for Postgres' toasted values). The first three
are merged here; a partial update mode, and the payload classes that need one on older tables, are refused."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import HudiError, UnsupportedTableError
from ..table.properties import MergeMode, TableConfig

IS_DELETED = "_hoodie_is_deleted"
_MERGE_PROPERTY = "hoodie.record.merge.property."
DELETE_FIELD = "hoodie.payload.delete.field"
DELETE_MARKER = "hoodie.payload.delete.marker"
PARTIAL_UPDATE_MODE = "hoodie.table.partial.update.mode"
_PAYLOAD_KEYS = ("hoodie.compaction.payload.class", "hoodie.legacy.payload.class")

# Payloads whose merge keeps the older value of the fields a later record leaves null (or Debezium-unavailable):
# neither commit- nor event-time ordering, and not merged by TMS.
_PARTIAL_PAYLOADS = {
    "org.apache.hudi.common.model.OverwriteNonDefaultsWithLatestAvroPayload":
        "a later record's null fields keep the older values",
    "org.apache.hudi.common.model.PartialUpdateAvroPayload": "a later record's null fields keep the older values",
    "org.apache.hudi.common.model.debezium.PostgresDebeziumAvroPayload":
        "toasted fields (__debezium_unavailable_value) keep the older values",
}


@dataclass(frozen=True)
class MergeRules:
    """How records of one key merge. `ordering` empty: the last write wins (commit-time ordering); else the
    write with the greatest ordering value, the fields compared in order (Hudi's ArrayComparable), ties to the
    later write. A data record is a delete when its `_hoodie_is_deleted` is true or its `delete_field` holds
    `delete_marker` (compared as text). `base_loses`: the log's winner replaces the base row whatever the
    ordering values (Hudi 0.x under commit-time ordering: the log alone is folded by ordering value)."""
    ordering: tuple[str, ...] = ()
    delete_field: str | None = None
    delete_marker: str | None = None
    base_loses: bool = False

    @classmethod
    def of(cls, ordering: str | list[str] | tuple[str, ...] | None, delete_field: str | None = None,
           delete_marker: str | None = None) -> MergeRules:
        fields = (ordering,) if isinstance(ordering, str) else tuple(ordering or ())
        return cls(fields, delete_field, delete_marker)


def _merge_property(config: TableConfig, key: str) -> str | None:
    return config.get(_MERGE_PROPERTY + key) or config.get(key) or None


def merge_refusal(config: TableConfig) -> str:
    """Why TMS cannot merge the table's records exactly; empty if it can."""
    try:
        mode = config.merge_mode
    except HudiError as e:
        return str(e)
    if mode is MergeMode.CUSTOM:
        merger = config.get("hoodie.compaction.payload.class") or config.get("hoodie.record.merge.strategy.id")
        return f"it uses merge mode CUSTOM, which needs a Java merger (payload {merger})"
    for key in _PAYLOAD_KEYS:
        payload = config.get(key)
        if payload in _PARTIAL_PAYLOADS:
            return (f"it uses payload {payload.rsplit('.', 1)[-1]} ({_PARTIAL_PAYLOADS[payload]}), "
                    "a partial merge TMS does not implement")
    partial = config.get(PARTIAL_UPDATE_MODE)
    if partial and partial.upper() != "NONE":
        return f"it uses partial update mode {partial} ({PARTIAL_UPDATE_MODE}), a partial merge TMS does not implement"
    field, marker = _merge_property(config, DELETE_FIELD), _merge_property(config, DELETE_MARKER)
    if bool(field) != bool(marker):
        return f"it sets only one of {DELETE_FIELD} and {DELETE_MARKER} (Hudi needs both)"
    return ""


def merge_rules(config: TableConfig) -> MergeRules:
    """The table's merge rules; UnsupportedTableError (one line) when TMS cannot merge its records exactly."""
    reason = merge_refusal(config)
    if reason:
        raise UnsupportedTableError(f"TMS cannot merge the records of table {config.name}: {reason}")
    ordering = tuple(config.ordering_fields) if config.merge_mode is MergeMode.EVENT_TIME_ORDERING else ()
    base_loses = False
    precombined = config.traits.payload_precombines_log_records
    if precombined and not ordering and config.ordering_fields:
        ordering, base_loses = tuple(config.ordering_fields), True
    return MergeRules(ordering, _merge_property(config, DELETE_FIELD), _merge_property(config, DELETE_MARKER),
                      base_loses)
