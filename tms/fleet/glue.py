"""A sync from an AWS Glue Data Catalog database: each Hudi table it lists is onboarded by its location (as
discovery onboards a table found on storage, under the policy templates), every other table is listed refused
with the reason, and a registered table dropped from the catalog is disabled, never deleted.

A table is Hudi's when Spark's provider says so (`spark.sql.sources.provider=hudi`) or its input format is one
of Hudi's (`org.apache.hudi...`); Hudi's own catalog sync lists a MERGE_ON_READ table two or three times (the
table, `_ro`, `_rt`), all at one location: it is onboarded once."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tms.db import Database
from tms.db.errors import NotFoundError
from tms.errors import ConfigError
from tms.hudi.storage.paths import InvalidBasePathError, is_under_roots, normalize_base_path

from .onboarding import ScanReport, sync_catalog

HUDI_PROVIDER = "hudi"
HUDI_INPUT_FORMAT_PREFIX = "org.apache.hudi."


@dataclass(frozen=True)
class CatalogTable:
    database: str
    name: str
    location: str | None
    input_format: str | None
    provider: str | None

    @property
    def is_hudi(self) -> bool:
        return (self.provider or "").lower() == HUDI_PROVIDER or (self.input_format or "").startswith(
            HUDI_INPUT_FORMAT_PREFIX)


def catalog_table(database: str, table: Mapping[str, Any]) -> CatalogTable:
    """A table as Glue's GetTables gives it."""
    descriptor = table.get("StorageDescriptor") or {}
    parameters = table.get("Parameters") or {}
    return CatalogTable(database=database, name=table["Name"], location=descriptor.get("Location") or None,
                        input_format=descriptor.get("InputFormat") or None,
                        provider=parameters.get("spark.sql.sources.provider"))


def glue_tables(client: Any, database: str) -> Iterator[CatalogTable]:
    """Every table of the Glue database (GetTables, page by page)."""
    for page in client.get_paginator("get_tables").paginate(DatabaseName=database):
        for table in page.get("TableList", []):
            yield catalog_table(database, table)


def glue_client(endpoint_url: str | None, region: str) -> Any:
    try:
        import boto3
    except ImportError:
        raise ConfigError("the Glue sync needs boto3: install TMS with its `glue` extra") from None
    return boto3.client("glue", endpoint_url=endpoint_url, region_name=region)


def catalog_root(database: str) -> str:
    """What discovery records as the root of the tables a catalog database lists."""
    return f"glue://{database}"


def sync_glue(database: Database, tables: Iterable[CatalogTable], glue_database: str, *,
              storage_roots: list[str], policies: dict[str, Any] | None = None,
              refresh: Callable[[], None] | None = None) -> ScanReport:
    """Onboard the Hudi tables of `tables` (all of one Glue database) at their locations; refuse the others with
    the reason; disable the registered tables the catalog no longer lists."""
    locations: dict[str, str] = {}
    refused: dict[str, str] = {}
    root = catalog_root(glue_database)
    for t in tables:
        where = t.location or f"{root}/{t.name}"
        if not t.is_hudi:
            refused.setdefault(where, f"{t.database}.{t.name} is not a Hudi table (input format "
                                      f"{t.input_format or 'none'})")
            continue
        if not t.location:
            refused[where] = f"{t.database}.{t.name} has no location"
            continue
        try:
            path = normalize_base_path(t.location)
        except InvalidBasePathError as exc:
            refused[where] = f"{t.database}.{t.name}: {exc}"
            continue
        if not is_under_roots(path, storage_roots):
            refused[path] = (f"{t.database}.{t.name} lies at {path}, outside the storage roots "
                             f"({', '.join(storage_roots)})")
            continue
        locations.setdefault(path, f"{t.database}.{t.name}")
    return sync_catalog(database, root, sorted(locations), refused, policies=policies, refresh=refresh)


def sync_glue_database(database: Database, glue_database: str, *, endpoint_url: str | None, region: str,
                       storage_roots: list[str], policies: dict[str, Any] | None = None,
                       refresh: Callable[[], None] | None = None) -> ScanReport:
    """Read the Glue database's tables and sync them (`sync_glue`). NotFoundError: the catalog has no such
    database; ConfigError: it cannot be read (unreachable, refused credentials). Either way nothing changed."""
    client = glue_client(endpoint_url, region)
    try:
        tables = list(glue_tables(client, glue_database))
    except client.exceptions.EntityNotFoundException:
        raise NotFoundError(f"the Glue catalog has no database {glue_database!r}") from None
    except Exception as exc:
        raise ConfigError(f"cannot read the Glue database {glue_database!r}: {exc}") from None
    return sync_glue(database, tables, glue_database, storage_roots=[normalize_base_path(r) for r in storage_roots],
                     policies=policies, refresh=refresh)
