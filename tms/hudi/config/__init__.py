"""The `hoodie.*` options the library reads, each typed once (as hudi-rs's `HudiTableConfig` and
`HudiWriteConfig`): `table` holds those of `hoodie.properties`, `write` those the writers set (archival,
compaction trigger, concurrency control). Modules read an option through its `HudiOption`, never by its key."""
from .option import HudiOption

__all__ = ["HudiOption"]
