"""The ops commands, one module per group, each over the HTTP API. Adding a group: a module with
`register(app)`, listed in GROUPS."""
from __future__ import annotations

import typer

from . import (
    alerts,
    backfill,
    backups,
    engines,
    indexes,
    mutes,
    queues,
    status,
    tables,
    tasks,
    templates,
    tokens,
    trigger,
    webhooks,
)

GROUPS = (status, tables, templates, backups, backfill, indexes, tasks, queues, engines, alerts, mutes, webhooks,
          trigger)


def register(app: typer.Typer, *, tokens_app: typer.Typer) -> None:
    """Mount every ops group on `app`; `tokens list|revoke` join the existing `tokens` group."""
    for group in GROUPS:
        group.register(app)
    tokens.register(tokens_app)
