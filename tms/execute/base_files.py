"""Base files as Hudi writes them, in the table's base file format: parquet with the full Avro schema, the
min/max record key and the record-key bloom filter in the footer, so Java readers and the BLOOM index use
them like their own; Lance (Hudi 1.1) with the same keys in its schema metadata, as Hudi's Lance writer
does. Without meta fields (virtual keys) Java writes neither bloom filter nor min/max keys, nor do we."""
from __future__ import annotations

import json
import posixpath
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tms.hudi.errors import HudiError
from tms.hudi.fs_view.file_names import BaseFileName
from tms.hudi.records import base_format, internal_schema, schema_evolution
from tms.hudi.records.bloom import DYNAMIC_V0, FOOTER_KEY, TYPE_CODE_KEY, DynamicBloomBuilder, dynamic_bloom_filter
from tms.hudi.records.merge import KEY
from tms.hudi.records.schema import empty_table, with_meta_fields
from tms.hudi.storage.table_storage import Storage
from tms.hudi.table.hudi_table import HudiTable

FILE_NAME = "_hoodie_file_name"


def latest_data_schema(table: HudiTable) -> dict:
    """The table's current data schema (Avro, no meta fields): from the latest completed write that records
    one, else the create schema. Compaction and clustering write new files in it, as Hudi does; the schemas of
    earlier writes must resolve to it (else SchemaEvolutionError, before anything is written)."""
    schema = schema_evolution.latest_data_schema(table)
    if schema is None:
        raise HudiError(f"table {table.name} records no schema (no commit has one, no hoodie.table.create.schema)")
    schema_evolution.require_resolvable_history(table, schema)
    return schema


def full_schema(data_schema: dict) -> dict:
    """The schema of a base file: meta fields, then the data fields."""
    return with_meta_fields(data_schema)


def base_file_path(partition: str, file_id: str, token: str, instant: str, extension: str = "parquet") -> str:
    name = str(BaseFileName(file_id, token, instant, extension))
    return posixpath.join(partition, name) if partition else name


def output_extension(table: HudiTable) -> str:
    """The extension of the base files TMS writes into `table`: its base file format's (never a Parquet file
    into a Lance table). Capabilities refuse compaction and clustering for formats TMS cannot write."""
    fmt = base_format.table_base_format(table.config)
    if fmt not in (base_format.PARQUET, base_format.LANCE):
        raise HudiError(f"table {table.name}: TMS cannot write {fmt} base files")
    return base_format.extension_of(fmt)


def read_base_file(storage: Storage, rel: str, schema: pa.Schema | None = None) -> pa.Table:
    """The rows of a base file; with `schema` (the output's), a file whose schema does not evolve into it is
    refused before its rows are read."""
    if schema is None:
        return base_format.read_base_file(storage, rel)
    name = BaseFileName.parse(rel.rsplit("/", 1)[-1])
    if name is None:
        raise HudiError(f"{rel} is not a base file name")
    history = internal_schema.read_history(storage)
    schema_evolution.require_evolvable(
        internal_schema.history_rename_schema(history, base_format.read_base_schema(storage, rel), name.instant),
        schema, f"base file {rel}")
    # columns renamed by schema-on-read evolution take their latest names
    return internal_schema.history_rename(history, base_format.read_base_file(storage, rel), name.instant)


def with_file_name(rows: pa.Table, name: str) -> pa.Table:
    """Compaction and clustering keep each record's commit time and seqno; only its file name changes."""
    return rows.set_column(rows.schema.get_field_index(FILE_NAME), FILE_NAME,
                           pa.repeat(pa.scalar(name, rows.schema.field(FILE_NAME).type), rows.num_rows))


def write_base_file(storage: Storage, rel: str, rows: pa.Table, avro_schema: dict) -> int:
    """Write `rows` (already in the schema of `avro_schema`, meta fields included) as a new base file; returns
    its size. The file must not exist: an attempt never overwrites another attempt's file."""
    keys = rows.column(KEY)
    key_metadata = {}
    virtual_keys = rows.num_rows and keys.null_count == rows.num_rows  # Java writes no keys for those
    if not virtual_keys:
        key_metadata = {FOOTER_KEY: dynamic_bloom_filter(keys), TYPE_CODE_KEY: DYNAMIC_V0}
    if rows.num_rows and not virtual_keys:
        key_metadata[b"hoodie_min_record_key"] = pc.min(keys).as_py().encode()
        key_metadata[b"hoodie_max_record_key"] = pc.max(keys).as_py().encode()
    if rel.endswith("." + base_format.extension_of(base_format.LANCE)):
        base_format.write_lance_file(storage, rel, rows, key_metadata)
        return storage.info(rel).size
    footer = {b"parquet.avro.schema": json.dumps(avro_schema).encode(), b"writer.model.name": b"avro",
              **key_metadata}
    # Footer metadata only, not the serialized Arrow schema: it would hold the bloom filter a second time.
    with (storage.open_new(rel) as fh,
          pq.ParquetWriter(fh, rows.schema.remove_metadata(), compression="snappy", store_schema=False) as writer):
        writer.write_table(rows.replace_schema_metadata(None))
        writer.add_key_value_metadata(footer)
    return storage.info(rel).size


class StreamingBaseFileWriter:
    """A new Parquet base file written batch by batch (a merge within a memory budget): the same file as
    `write_base_file` writes for the same rows, the bloom filter and min/max keys built as the keys go by.
    The file is created by the first batch, or by `close` when `always` (a base file that lost every row)."""

    def __init__(self, storage: Storage, rel: str, schema: pa.Schema, avro_schema: dict, always: bool = True):
        self.storage, self.rel, self.schema, self.avro_schema, self.always = storage, rel, schema, avro_schema, always
        self.name = rel.rsplit("/", 1)[-1]
        self.bloom = DynamicBloomBuilder()
        self.min_key: str | None = None
        self.max_key: str | None = None
        self.rows = 0
        self.null_keys = 0
        self._fh: Any = None
        self._writer: pq.ParquetWriter | None = None

    def write(self, rows: pa.Table) -> None:
        if self._writer is None:
            self._fh = self.storage.open_new(self.rel)
            self._writer = pq.ParquetWriter(self._fh, self.schema.remove_metadata(), compression="snappy",
                                            store_schema=False)
        if not rows.num_rows:
            return
        rows = with_file_name(rows, self.name)
        keys = rows.column(KEY)
        self.rows += rows.num_rows
        self.null_keys += keys.null_count
        present = keys.drop_null()
        if len(present):
            self.bloom.add(present)
            low, high = pc.min(present).as_py(), pc.max(present).as_py()
            self.min_key = low if self.min_key is None or low < self.min_key else self.min_key
            self.max_key = high if self.max_key is None or high > self.max_key else self.max_key
        self._writer.write_table(rows.replace_schema_metadata(None))

    def close(self) -> int | None:
        """Finish the file; its size, or None when no row came and the file need not exist."""
        if self._writer is None:
            if not self.always:
                return None
            self.write(empty_table(self.schema))
        assert self._writer is not None
        footer = {b"parquet.avro.schema": json.dumps(self.avro_schema).encode(), b"writer.model.name": b"avro"}
        if not (self.rows and self.null_keys == self.rows):  # Java writes no keys without meta fields
            footer |= {FOOTER_KEY: self.bloom.serialize(), TYPE_CODE_KEY: DYNAMIC_V0}
        if self.rows and self.null_keys != self.rows and self.min_key is not None and self.max_key is not None:
            footer |= {b"hoodie_min_record_key": self.min_key.encode(),
                       b"hoodie_max_record_key": self.max_key.encode()}
        self._writer.add_key_value_metadata(footer)
        self._writer.close()
        self._fh.close()
        return self.storage.info(self.rel).size
