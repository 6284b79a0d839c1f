"""Onboarding what discovery finds under a storage root: a new table TMS can serve is registered (with the
policies given), one it can do nothing for is recorded as refused with the reason, and a registered table that
is gone from storage is disabled (never deleted) with a `table_missing` alert. Idempotent: a table found again
is left as it is; a refused one is assessed again."""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tms.db import AlertRepo, Database, DiscoveryRepo, TableRepo
from tms.hudi.context import DEFAULT_CONTEXT, HudiContext
from tms.hudi.errors import HudiError
from tms.hudi.storage.paths import normalize_base_path
from tms.hudi.table.hudi_table import HudiTable

from .discovery import find_tables
from .registration import assess, registration_facts

log = logging.getLogger(__name__)
MISSING_ALERT = "table_missing"


@dataclass
class ScanReport:
    root: str
    registered: list[dict[str, Any]] = field(default_factory=list)  # {id, base_path}
    refused: list[dict[str, Any]] = field(default_factory=list)     # {base_path, reason}
    missing: list[dict[str, Any]] = field(default_factory=list)     # {id, base_path}: disabled
    known: int = 0  # found again, left as they were
    listings: int = 0


def scan_root(database: Database, root: str, *, policies: dict[str, Any] | None = None, max_depth: int = 4,
              refresh: Callable[[], None] | None = None, context: HudiContext = DEFAULT_CONTEXT) -> ScanReport:
    """Find the tables under `root` and onboard what is new. `policies`: the stored policies new tables get.
    `refresh`: called after tables were registered (the caller's caches of table identities). `context`: what
    the root and its tables are read with."""
    root = normalize_base_path(root).rstrip("/") or "/"
    report = ScanReport(root)
    with database.transaction() as session:
        known = DiscoveryRepo(session).under(root)
    # Registered tables are not read again; refused and missing ones are (a table may have been upgraded to
    # something TMS serves, or come back).
    live = {p for p, d in known.items() if d.state == "registered"}
    found = find_tables(root, known=live, max_depth=max_depth, context=context)
    report.listings = found.listings
    present = set(found.tables)
    for base_path in found.tables:
        if base_path in live:
            report.known += 1
            continue
        _onboard(database, root, base_path, policies or {}, report, context)
    with database.transaction() as session:
        DiscoveryRepo(session).seen(present & live)
    for base_path in sorted(live - present):
        _gone(database, root, base_path, known[base_path].table_id, report)
    if report.registered and refresh is not None:
        refresh()
    return report


def _onboard(database: Database, root: str, base_path: str, policies: dict[str, Any], report: ScanReport,
             context: HudiContext) -> None:
    try:
        table = HudiTable.load(base_path, context=context)
        _, refusal = assess(table)
        facts = registration_facts(table)
    except (HudiError, OSError, ValueError) as exc:
        refusal = f"cannot read the table: {exc}"
    with database.transaction() as session:
        discovered = DiscoveryRepo(session)
        tables = TableRepo(session)
        if refusal:
            discovered.record(base_path, root=root, state="refused", reason=refusal)
            report.refused.append({"base_path": base_path, "reason": refusal})
            return
        existing = tables.by_base_path(base_path)
        if existing is None:
            existing = tables.register(base_path=base_path, policies=dict(policies), **facts)
            report.registered.append({"id": existing.id, "base_path": base_path})
            log.info("discovery: registered %s as table %s", base_path, existing.id)
        else:  # registered through the API before discovery saw it
            report.known += 1
        discovered.record(base_path, root=root, state="registered", table_id=existing.id)


def onboard_path(database: Database, base_path: str, root: str,
                 policies: dict[str, Any] | None = None, context: HudiContext = DEFAULT_CONTEXT) -> ScanReport:
    """Onboard one table (a callback from an unregistered base path under a storage root): registered if TMS
    serves it, recorded as refused with the reason if not; a table registered already is left as it is."""
    report = ScanReport(normalize_base_path(root).rstrip("/") or "/")
    _onboard(database, report.root, normalize_base_path(base_path), policies or {}, report, context)
    return report


def sync_catalog(database: Database, root: str, locations: list[str], refused: dict[str, str], *,
                 policies: dict[str, Any] | None = None, refresh: Callable[[], None] | None = None,
                 context: HudiContext = DEFAULT_CONTEXT) -> ScanReport:
    """Onboard the tables a catalog lists (`root`: the catalog database's label, `locations`: its tables' base
    paths, normalized; `refused`: what it lists that TMS refuses, by location, with the reason). Registered
    tables found again are left as they are; those the catalog no longer lists are disabled."""
    report = ScanReport(root)
    with database.transaction() as session:
        known = DiscoveryRepo(session).under(root)
    for where, reason in refused.items():
        with database.transaction() as session:
            DiscoveryRepo(session).record(where, root=root, state="refused", reason=reason)
        report.refused.append({"base_path": where, "reason": reason})
    live = {p for p, d in known.items() if d.state == "registered"}
    for base_path in locations:
        if base_path in live:
            report.known += 1
            continue
        _onboard(database, root, base_path, policies or {}, report, context)
    with database.transaction() as session:
        DiscoveryRepo(session).seen(set(locations) & live)
    for base_path in sorted(live - set(locations)):
        _gone(database, root, base_path, known[base_path].table_id, report, "dropped from the catalog")
    if report.registered and refresh is not None:
        refresh()
    return report


def _gone(database: Database, root: str, base_path: str, table_id: int | None, report: ScanReport,
          reason: str = "gone from storage") -> None:
    with database.transaction() as session:
        DiscoveryRepo(session).record(base_path, root=root, state="missing", reason=reason, table_id=table_id)
        if table_id is None:
            return
        TableRepo(session).update(table_id, enabled=False)
        AlertRepo(session).raise_alert(kind=MISSING_ALERT, severity="warning", table_id=table_id,
                                       message=f"table {table_id} ({base_path}) is {reason}: disabled",
                                       fingerprint=f"{MISSING_ALERT}:{table_id}")
    report.missing.append({"id": table_id, "base_path": base_path})
    log.warning("discovery: table %s (%s) is %s: disabled", table_id, base_path, reason)
