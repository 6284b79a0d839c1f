"""A sync from a catalog database (AWS Glue, a Hive Metastore): each Hudi table it lists is onboarded by its
location (as discovery onboards a table found on storage, under the policy templates), every other table is
listed refused with the reason, and a registered table dropped from the catalog is disabled, never deleted.
The catalogs' own readers (`glue`, `hive`) turn what they list into `CatalogTable`s.

A table is Hudi's when Spark's provider says so (`spark.sql.sources.provider=hudi`) or its input format is one
of Hudi's (`org.apache.hudi...`); Hudi's own catalog sync lists a MERGE_ON_READ table two or three times (the
table, `_ro`, `_rt`), all at one location: it is onboarded once."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tms.db import Database
from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.storage.paths import InvalidBasePathError, is_under_roots, normalize_base_path

from .onboarding import ScanReport, sync_catalog

HUDI_PROVIDER = "hudi"
HUDI_INPUT_FORMAT_PREFIX = "org.apache.hudi."
PROVIDER_PARAMETER = "spark.sql.sources.provider"  # Spark's data source, among a catalog table's parameters


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


def sync_catalog_tables(database: Database, tables: Iterable[CatalogTable], root: str, *, storage_roots: list[str],
                        policies: dict[str, Any] | None = None,
                        refresh: Callable[[], None] | None = None,
                        context: HudiContext = DEFAULT_CONTEXT) -> ScanReport:
    """Onboard the Hudi tables of `tables` (all of one catalog database, recorded under `root`, e.g.
    `glue://sales`) at their locations; refuse the others with the reason; disable the registered tables the
    catalog no longer lists. `storage_roots`: the roots a location must lie under."""
    roots = [normalize_base_path(r) for r in storage_roots]
    locations: dict[str, str] = {}
    refused: dict[str, str] = {}
    for t in tables:
        path, problem = _base_path(t)
        where = path or t.location or f"{root}/{t.name}"
        if not t.is_hudi:
            refused.setdefault(where, f"{t.database}.{t.name} is not a Hudi table (input format "
                                      f"{t.input_format or 'none'})")
            continue
        if path is None:
            refused[where] = f"{t.database}.{t.name}{problem}"
            continue
        if not is_under_roots(path, roots):
            refused[path] = (f"{t.database}.{t.name} lies at {path}, outside the storage roots "
                             f"({', '.join(roots)})")
            continue
        locations.setdefault(path, f"{t.database}.{t.name}")
    return sync_catalog(database, root, sorted(locations), refused, policies=policies, refresh=refresh,
                        context=context)


def _base_path(table: CatalogTable) -> tuple[str | None, str]:
    """The table's location in one spelling (a metastore gives `file:/data/t` for /data/t), or None and what is
    wrong with it."""
    if not table.location:
        return None, " has no location"
    try:
        return normalize_base_path(table.location), ""
    except InvalidBasePathError as exc:
        return None, f": {exc}"
