"""A sync from an AWS Glue Data Catalog database (tms.fleet.catalog): its tables as Glue's GetTables lists
them, recorded under the root `glue://<database>`."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from tms.db import Database
from tms.db.errors import NotFoundError
from tms.errors import ConfigError
from tms.hudi.context import DEFAULT_CONTEXT, HudiContext

from .catalog import PROVIDER_PARAMETER, CatalogTable, sync_catalog_tables
from .onboarding import ScanReport


def catalog_table(database: str, table: Mapping[str, Any]) -> CatalogTable:
    """A table as Glue's GetTables gives it."""
    descriptor = table.get("StorageDescriptor") or {}
    parameters = table.get("Parameters") or {}
    return CatalogTable(database=database, name=table["Name"], location=descriptor.get("Location") or None,
                        input_format=descriptor.get("InputFormat") or None,
                        provider=parameters.get(PROVIDER_PARAMETER))


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
    """What discovery records as the root of the tables a Glue database lists."""
    return f"glue://{database}"


def sync_glue_database(database: Database, glue_database: str, *, endpoint_url: str | None, region: str,
                       storage_roots: list[str], policies: dict[str, Any] | None = None,
                       refresh: Callable[[], None] | None = None,
                       context: HudiContext = DEFAULT_CONTEXT) -> ScanReport:
    """Read the Glue database's tables and sync them (`catalog.sync_catalog_tables`). NotFoundError: the catalog
    has no such database; ConfigError: it cannot be read (unreachable, refused credentials). Either way nothing
    changed."""
    client = glue_client(endpoint_url, region)
    try:
        tables = list(glue_tables(client, glue_database))
    except client.exceptions.EntityNotFoundException:
        raise NotFoundError(f"the Glue catalog has no database {glue_database!r}") from None
    except Exception as exc:
        raise ConfigError(f"cannot read the Glue database {glue_database!r}: {exc}") from None
    return sync_catalog_tables(database, tables, catalog_root(glue_database), storage_roots=storage_roots,
                               policies=policies, refresh=refresh, context=context)
