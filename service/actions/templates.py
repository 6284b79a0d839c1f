"""Policy templates' use cases: put one (checked as a table's settings are) and delete one; each resolves every
table's settings again."""
from __future__ import annotations

from sqlalchemy.orm import Session

from tms.config import Settings
from tms.db import TableRepo, TemplateRecord, TemplateRepo
from tms.hudi.storage.paths import normalize_base_path
from tms.hudi.table.write_options import split_concurrency_options
from tms.planning.templates import PER_TABLE_OPTIONS

from ..errors import validation_error
from ..schemas.templates import TemplateIn
from .tables import checked_concurrency, checked_policy


def put_template(session: Session, settings: Settings, name: str, template: TemplateIn
                 ) -> tuple[TemplateRecord, int]:
    """Create or replace the template `name` and apply the templates to the tables: the template and how many
    tables changed. A 422 for an option TMS cannot use or one that belongs to one table (TTL)."""
    locks, options = split_concurrency_options(template.policies)
    per_table = [k for k in options if k in PER_TABLE_OPTIONS]
    if per_table:
        raise validation_error([{"loc": (per_table[0],), "type": "value_error",
                                 "msg": f"{per_table[0]} is set on a table, not a template (it names a column "
                                        "or needs partitions by time)"}], "body", "policies")
    policy = checked_policy(settings, {}, options)
    path_prefix = (normalize_base_path(template.path_prefix).rstrip("/") or "/") if template.path_prefix else None
    concurrency = checked_concurrency({}, locks, base_path=path_prefix or "/", table_name=name)
    stored = TemplateRepo(session).put(
        name, database=template.database, name_pattern=template.name_pattern, path_prefix=path_prefix,
        policies={**policy.explicit(), **concurrency}, queue=template.queue, priority=template.priority)
    return stored, TableRepo(session).apply_templates()


def delete_template(session: Session, name: str) -> None:
    """Delete the template `name` (its tables fall back to another template or the defaults)."""
    TemplateRepo(session).delete(name)
    TableRepo(session).apply_templates()
