"""Whether the library reads a table exactly, decided from its `hoodie.properties` alone (no listing), or why not,
in one line a user can act on. The reader refuses before it reads a row; a table that cannot be read exactly is
never read. The reasons are also the pieces callers decide other uses of a table by (merging it, writing it)."""
from __future__ import annotations

from ..config import table as table_config
from ..errors import UnsupportedTableError
from ..table.hudi_table import HudiTable
from ..table.properties import TableConfig
from .base_format import table_base_format, unreadable_format_reason
from .merge_rules import merge_refusal, virtual_keys_refusal

BOOTSTRAP_BASE_PATH = table_config.BOOTSTRAP_BASE_PATH.key
DROP_PARTITION_COLUMNS = table_config.DROP_PARTITION_COLUMNS.key


def merge_reason(config: TableConfig) -> str:
    """Why records of the table cannot be merged exactly (a Java merger, a partial merge); empty if they can."""
    return merge_refusal(config)


def bootstrap_reason(config: TableConfig) -> str:
    """Why a bootstrap table's files cannot be taken as they are; empty for a table that is none."""
    bootstrap_base_path = table_config.BOOTSTRAP_BASE_PATH.value(config.props)
    if bootstrap_base_path:
        return (f"it is a bootstrap table ({BOOTSTRAP_BASE_PATH}={bootstrap_base_path}): "
                "its skeleton base files need the source files stitched in, which TMS does not do")
    return ""


def unreadable_base_format_reason(config: TableConfig) -> str:
    """Why the table's base files cannot be read; empty if they can."""
    return unreadable_format_reason(table_base_format(config)) or ""


def virtual_keys_reason(config: TableConfig) -> str:
    """Why the log records of a table without meta fields cannot be merged exactly; empty if they can."""
    return virtual_keys_refusal(config)


def dropped_partition_columns_reason(config: TableConfig) -> str:
    """Why the table's rows cannot be read whole: its partition columns are not in its files; empty otherwise."""
    if table_config.DROP_PARTITION_COLUMNS.value(config.props):
        return (f"its partition columns are dropped from the data files ({DROP_PARTITION_COLUMNS}=true): "
                "TMS cannot rebuild their values from partition paths exactly")
    return ""


def reading_refusals(table: HudiTable) -> list[str]:
    """Every reason the library cannot read `table` exactly; empty when it can."""
    config = table.config
    reasons = [merge_reason(config), bootstrap_reason(config), unreadable_base_format_reason(config),
               virtual_keys_reason(config), dropped_partition_columns_reason(config)]
    return [r for r in reasons if r]


def require_readable(table: HudiTable) -> None:
    """Raise UnsupportedTableError (one line) unless the library can read `table` exactly."""
    reasons = reading_refusals(table)
    if reasons:
        raise UnsupportedTableError(f"TMS cannot read table {table.config.name}: {'; '.join(reasons)}")
