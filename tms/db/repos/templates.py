"""Policy templates (`policy_templates`): their rows, and the tables' effective settings kept in step with them
(tms.planning.templates resolves; this stores)."""
from __future__ import annotations

import builtins
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from tms.planning.templates import Template

from ..errors import NotFoundError
from ..models import PolicyTemplate, RegisteredTable
from ..records import TemplateRecord, records_of


class TemplateRepo:
    def __init__(self, session: Session):
        self.session = session

    def list(self) -> builtins.list[TemplateRecord]:
        return records_of(TemplateRecord, self.session.scalars(select(PolicyTemplate).order_by(PolicyTemplate.name),
                                         execution_options={"populate_existing": True}))

    def get(self, name: str) -> TemplateRecord:
        return TemplateRecord.of(self._row(name))

    def _row(self, name: str) -> PolicyTemplate:
        template = self.session.scalar(select(PolicyTemplate).where(PolicyTemplate.name == name)
                                       .execution_options(populate_existing=True))
        if template is None:
            raise NotFoundError(f"no policy template named {name!r}")
        return template

    def put(self, name: str, **fields: Any) -> TemplateRecord:
        """Create or replace the template (the caller applies it to the tables: TableRepo.apply_templates)."""
        fields = {**fields, "updated_at": func.now()}
        stmt = (insert(PolicyTemplate).values(name=name, **fields)
                .on_conflict_do_update(index_elements=[PolicyTemplate.name], set_=fields).returning(PolicyTemplate))
        return TemplateRecord.of(self.session.scalars(stmt, execution_options={"populate_existing": True}).one())

    def delete(self, name: str) -> None:
        self.session.delete(self._row(name))
        self.session.flush()

    def table_counts(self) -> dict[str, int]:
        """Template name -> the registered tables it applies to."""
        return dict(self.session.execute(  # type: ignore[arg-type]
            select(RegisteredTable.template, func.count()).where(RegisteredTable.template.is_not(None))
            .group_by(RegisteredTable.template)).all())

    def templates(self) -> builtins.list[Template]:
        return [as_template(t) for t in self.list()]


def as_template(row: TemplateRecord) -> Template:
    return Template(name=row.name, database=row.database, name_pattern=row.name_pattern,
                    path_prefix=row.path_prefix, policies=dict(row.policies or {}), queue=row.queue,
                    priority=row.priority)
