"""Registered tables: registration, look-ups, filters and the per-table planning lock."""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, Row, func, literal, or_, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from tms.planning.templates import Effective, Template, matching_template, own_settings, resolve

from ..errors import ConflictError, NotFoundError
from ..models import RegisteredTable, Task
from ..records import TableRecord, table_of, tables_of
from ..states import TaskState
from .templates import TemplateRepo

# The settings a policy template may give a table: given to `register` and `update`, they are the table's own.
_SETTINGS = ("policies", "concurrency_options", "queue", "priority")
# What the periodic trigger reads of a table to tell whether time made work due (not the whole row).
_TICK_COLUMNS = (RegisteredTable.id, RegisteredTable.planner_state, RegisteredTable.policies,
                 RegisteredTable.table_type)


class TableRepo:
    def __init__(self, session: Session):
        self.session = session

    def register(self, **fields: Any) -> TableRecord:
        """Insert a table; ConflictError if its base path is registered already. `policies`,
        `concurrency_options`, `queue` and `priority` (None or absent: not set) are the table's own settings;
        the policy template matching it gives the others."""
        fields = self._settled(fields, TemplateRepo(self.session).templates())
        stmt = (insert(RegisteredTable).values(**fields)
                .on_conflict_do_nothing(index_elements=[RegisteredTable.base_path])
                .returning(RegisteredTable.id))
        table_id = self.session.execute(stmt).scalar()
        if table_id is None:
            existing = self.by_base_path(fields["base_path"])
            raise ConflictError(f"{fields['base_path']} is already registered as table "
                                f"{existing.id if existing else '?'}")
        return self.get(table_id)

    def register_many(self, rows: list[dict[str, Any]]) -> list[int]:
        """Insert many tables in one statement (a bulk registration); their ids, in order. A base path
        registered already fails the whole statement (IntegrityError)."""
        if not rows:
            return []
        templates = TemplateRepo(self.session).templates()
        rows = [self._settled(row, templates) for row in rows]
        stmt = insert(RegisteredTable).returning(RegisteredTable.id, sort_by_parameter_order=True)
        return list(self.session.scalars(stmt, rows))

    @staticmethod
    def _settled(fields: dict[str, Any], templates: list[Template]) -> dict[str, Any]:
        """A new row's columns: its own settings recorded, the effective ones resolved."""
        own = own_settings(**{k: fields.get(k) for k in _SETTINGS})
        rest = {k: v for k, v in fields.items() if k not in _SETTINGS}
        template = matching_template(templates, database=fields.get("database") or "", name=fields.get("name") or "",
                                     base_path=fields["base_path"])
        return {**rest, **resolve(own, template).columns(), "own_settings": own}

    def effective(self, table: TableRecord) -> Effective:
        """The table's settings and where each comes from (the table, its template, the default)."""
        templates = TemplateRepo(self.session).templates()
        template = next((t for t in templates if t.name == table.template), None)
        return resolve(table.own_settings, template)

    def apply_templates(self, batch: int = 5000) -> int:
        """Resolve every table's settings again under the templates as they are now (one was put or deleted);
        the number of tables whose effective settings changed, which the periodic trigger looks at next. Reads
        only the columns it resolves, and writes the changed rows in one bulk UPDATE per batch."""
        templates = TemplateRepo(self.session).templates()
        now = self.session.execute(select(func.now())).scalar_one()
        t = RegisteredTable
        columns = (t.id, t.database, t.name, t.base_path, t.own_settings, t.policies, t.concurrency_options, t.queue,
                   t.priority, t.template)
        resolved_for: dict[tuple[str, str | None], dict[str, Any]] = {}  # most tables share their own settings
        changed, after = 0, 0
        while True:
            rows = self.session.execute(select(*columns).where(t.id > after).order_by(t.id).limit(batch)).all()
            if not rows:
                return changed
            updates = []
            for row in rows:
                template = matching_template(templates, database=row.database, name=row.name,
                                             base_path=row.base_path)
                key = (json.dumps(row.own_settings, sort_keys=True), template.name if template else None)
                if key not in resolved_for:
                    resolved_for[key] = resolve(row.own_settings, template).columns()
                resolved = resolved_for[key]
                if any(getattr(row, k) != v for k, v in resolved.items()):
                    updates.append({"id": row.id, **resolved, "tick_due_at": now})
            if updates:
                self.session.execute(update(RegisteredTable), updates)
                changed += len(updates)
            after = rows[-1].id

    def get(self, table_id: int) -> TableRecord:
        return TableRecord.of(self._row(table_id))

    def _row(self, table_id: int) -> RegisteredTable:
        table = self.session.get(RegisteredTable, table_id, populate_existing=True)
        if table is None:
            raise NotFoundError(f"no table with id {table_id}")
        return table

    def by_id(self, table_id: int) -> TableRecord | None:
        """The table, None if it is not registered (any more)."""
        return table_of(self.session.get(RegisteredTable, table_id))

    def by_base_path(self, base_path: str) -> TableRecord | None:
        return table_of(self.session.scalar(select(RegisteredTable).where(RegisteredTable.base_path == base_path)))

    def find(self, *, database: str | None = None, name: str | None = None, table_type: str | None = None,
             enabled: bool | None = None, limit: int = 50, offset: int = 0,
             after_id: int | None = None, count: bool = True) -> tuple[list[TableRecord], int]:
        """A page of tables matching every given filter (`name` is a substring), by id, and the total of
        matching tables; `after_id` starts the page after that table (keyset pagination); without `count`,
        the total is not counted (0)."""
        conditions = []
        if database is not None:
            conditions.append(RegisteredTable.database == database)
        if name is not None:
            conditions.append(RegisteredTable.name.contains(name, autoescape=True))
        if table_type is not None:
            conditions.append(RegisteredTable.table_type == table_type)
        if enabled is not None:
            conditions.append(RegisteredTable.enabled.is_(enabled))
        total = self.session.scalar(select(func.count()).select_from(RegisteredTable).where(*conditions)) \
            if count else 0
        if after_id is not None:
            conditions.append(RegisteredTable.id > after_id)
        rows = self.session.scalars(select(RegisteredTable).where(*conditions)
                                    .order_by(RegisteredTable.id).limit(limit).offset(offset))
        return tables_of(rows), total or 0

    def update(self, table_id: int, **changes: Any) -> TableRecord:
        """Change the table's columns. New policies, or enabling it, ask the next periodic trigger to look at
        it (`tick_due_at` now): what is due by time may have changed."""
        table = self._row(table_id)
        if "policies" in changes or changes.get("enabled"):
            changes = {**changes, "tick_due_at": func.now()}
        if any(k in changes for k in _SETTINGS):  # the table's own settings: the effective ones follow
            own = dict(table.own_settings or {})
            for key in _SETTINGS:
                if key in changes:
                    own[key] = changes.pop(key)
            own = own_settings(**{k: own.get(k) for k in _SETTINGS})
            template = matching_template(TemplateRepo(self.session).templates(), database=table.database,
                                         name=table.name, base_path=table.base_path)
            changes = {**changes, **resolve(own, template).columns(), "own_settings": own}
        for key, value in changes.items():
            setattr(table, key, value)
        self.session.flush()
        return TableRecord.of(table)

    def unregister(self, table_id: int) -> None:
        """Forget a table and everything recorded about it. Never touches the table's files.
        Refused while one of its tasks runs (its worker would lose its task row)."""
        table = self._row(table_id)
        running = self.session.scalar(select(func.count()).select_from(Task).where(
            Task.table_id == table_id, Task.state == TaskState.RUNNING))
        if running:
            raise ConflictError(f"table {table_id} has {running} running task(s); cancel them first")
        self.session.delete(table)
        self.session.flush()

    def request_ticks(self) -> int:
        """Mark the enabled tables the periodic trigger is due on (`tick_due_at` passed) and not marked yet,
        for the planners to take: a range of the due-time index, not every table. The number marked."""
        result = self.session.execute(
            update(RegisteredTable).where(RegisteredTable.tick_due_at <= func.now(), RegisteredTable.enabled.is_(True),
                                          RegisteredTable.tick_requested_at.is_(None))
            .values(tick_requested_at=func.now()), execution_options={"synchronize_session": False})
        return cast(CursorResult[Any], result).rowcount

    def take_tick_requests(self, limit: int = 100) -> list[int]:
        """Take (and clear) up to `limit` of the tables the manager's leader marked for the periodic trigger.
        SKIP LOCKED, so planners share the marked tables."""
        marked = (select(RegisteredTable.id).where(RegisteredTable.tick_requested_at.is_not(None))
                  .order_by(RegisteredTable.tick_requested_at).limit(limit)
                  .with_for_update(skip_locked=True).scalar_subquery())
        return list(self.session.scalars(update(RegisteredTable).where(RegisteredTable.id.in_(marked))
                                         .values(tick_requested_at=None).returning(RegisteredTable.id),
                                         execution_options={"synchronize_session": False}))

    def lock_many_for_planning(self, table_ids: list[int]) -> list[TableRecord]:
        """Lock those of the tables no other planner holds (SKIP LOCKED), for this transaction; by id."""
        return tables_of(self.session.scalars(select(RegisteredTable).where(RegisteredTable.id.in_(table_ids))
                                              .order_by(RegisteredTable.id).with_for_update(skip_locked=True)
                                              .execution_options(populate_existing=True)))

    def lock_for_planning(self, table_id: int) -> TableRecord | None:
        """Lock the table's row for this transaction, or None if another planner holds it
        (SKIP LOCKED: planners on many machines share the tables without waiting)."""
        return table_of(self.session.scalar(select(RegisteredTable).where(RegisteredTable.id == table_id)
                                            .with_for_update(skip_locked=True).execution_options(populate_existing=True)))

    # --- what a planning pass keeps of a table it holds (under its planning lock) ----------------------
    def store_digest(self, table_id: int, digest: dict[str, Any], due_at: datetime | None) -> None:
        """Keep the table's digest (`planner_state`; {}: none, the next reading rebuilds it) and the time it
        makes the periodic trigger due (`tick_due_at`)."""
        self._set(table_id, planner_state=digest, tick_due_at=due_at)

    def store_tick_due(self, table_id: int, due_at: datetime | None) -> None:
        """Keep the time the table's digest makes the periodic trigger due."""
        self._set(table_id, tick_due_at=due_at)

    def store_timeline_stamp(self, table_id: int, stamp: str | None) -> None:
        """Keep the stamp of the timeline as last read whole (None: not read, the scan rereads it)."""
        self._set(table_id, timeline_stamp=stamp)

    def mark_planned(self, table_id: int, at: datetime) -> None:
        """Record when a planning pass last ran on the table."""
        self._set(table_id, planned_at=at)

    def _set(self, table_id: int, **values: Any) -> None:
        """Set columns of one table; a row they would not change is not written (its `updated_at` stays)."""
        t = RegisteredTable
        changed = or_(*(getattr(t, k).is_distinct_from(literal(v, getattr(t, k).type)) for k, v in values.items()))
        self.session.execute(update(t).where(t.id == table_id, changed).values(**values))

    # --- what the planner's periodic trigger and reconciliation scan read (a few columns, in pages) ----
    def tick_due_page(self, now: datetime, after: tuple[datetime, int] | None, limit: int) -> list[Row[Any]]:
        """Enabled tables whose `tick_due_at` passed, after `after` in (tick_due_at, id) order: (id,
        planner_state, policies, table_type, tick_due_at) rows, one range of the index."""
        stmt = select(*_TICK_COLUMNS, RegisteredTable.tick_due_at).where(
            RegisteredTable.enabled.is_(True), RegisteredTable.tick_due_at <= now)
        if after is not None:
            stmt = stmt.where(tuple_(RegisteredTable.tick_due_at, RegisteredTable.id) > tuple_(*after))
        return list(self.session.execute(stmt.order_by(RegisteredTable.tick_due_at, RegisteredTable.id).limit(limit)))

    def tick_rows(self, table_ids: list[int]) -> list[Row[Any]]:
        """(id, planner_state, policies, table_type) of these tables, the enabled ones."""
        return list(self.session.execute(select(*_TICK_COLUMNS).where(RegisteredTable.id.in_(table_ids),
                                                                      RegisteredTable.enabled.is_(True))))

    def stamps_page(self, after: int, limit: int, *, ids: tuple[int, int] | None = None) -> list[Row[Any]]:
        """(id, base_path, timeline_stamp, scanned_at) of the enabled tables with ids past `after` (and within
        `ids`, inclusive, if given), by id: what the scan needs to tell whose timeline changed."""
        stmt = select(RegisteredTable.id, RegisteredTable.base_path, RegisteredTable.timeline_stamp,
                      RegisteredTable.planner_state["scanned_at"].as_float().label("scanned_at")) \
            .where(RegisteredTable.enabled.is_(True), RegisteredTable.id > after)
        if ids is not None:
            stmt = stmt.where(RegisteredTable.id.between(*ids))
        return list(self.session.execute(stmt.order_by(RegisteredTable.id).limit(limit)))
