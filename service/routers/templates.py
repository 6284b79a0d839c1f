"""Policy templates: rules by database, table-name pattern or path prefix that give tables their policies,
queue, priority and lock options (tms.planning.templates); a table's own settings override them. Putting or
deleting one resolves every table's settings again."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response, status

from tms.db import PolicyTemplate, TableRepo, TemplateRepo
from tms.hudi.storage.paths import normalize_base_path
from tms.hudi.table.write_options import split_concurrency_options
from tms.planning.templates import PER_TABLE_OPTIONS

from ..auth import Admin, AuthenticatedFirst, Viewer
from ..errors import validation_error
from ..schemas.problems import ADMIN, VIEWER, problems
from ..schemas.templates import TemplateIn, TemplateOut, TemplatePut
from .tables import _concurrency, _forget_cached_identities, _policy

router = APIRouter(route_class=AuthenticatedFirst, prefix="/api/v1/policy-templates", tags=["policy templates"])
Name = Annotated[str, Path(max_length=64, pattern=r"^[A-Za-z0-9_.-]+$", description="The template's name")]


def _out(template: PolicyTemplate, counts: dict[str, int]) -> dict[str, Any]:
    return {**TemplateOut.model_validate(template).model_dump(), "tables": counts.get(template.name, 0)}


@router.get("", response_model=list[TemplateOut], dependencies=[Viewer], summary="The policy templates",
            responses=problems(*VIEWER))
def list_templates(request: Request) -> list[dict[str, Any]]:
    with request.app.state.database.transaction() as session:
        repo = TemplateRepo(session)
        counts = repo.table_counts()
        return [_out(t, counts) for t in repo.list()]


@router.get("/{name}", response_model=TemplateOut, dependencies=[Viewer], summary="One policy template",
            responses=problems(*VIEWER, 404, 422))
def get_template(name: Name, request: Request) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        repo = TemplateRepo(session)
        return _out(repo.get(name), repo.table_counts())


@router.put("/{name}", response_model=TemplatePut, dependencies=[Admin],
            summary="Create or replace a policy template, and apply it to the tables it matches",
            responses=problems(*ADMIN, 400, 404, 413, 422, d422="Malformed, an option TMS cannot use, or an "
                                                                "option that belongs to one table (TTL)"))
def put_template(name: Name, body: TemplateIn, request: Request) -> dict[str, Any]:
    """The most specific template matching a table applies (a name pattern before a database before a path
    prefix; then the longer prefix, the more literal pattern); the table's own settings override it. Record and
    partition TTL options are refused: they hold for one table's columns and partitions."""
    locks, options = split_concurrency_options(body.policies)
    per_table = [k for k in options if k in PER_TABLE_OPTIONS]
    if per_table:
        raise validation_error([{"loc": (per_table[0],), "type": "value_error",
                                 "msg": f"{per_table[0]} is set on a table, not a template (it names a column "
                                        "or needs partitions by time)"}], "body", "policies")
    policy = _policy({}, options, request)
    path_prefix = (normalize_base_path(body.path_prefix).rstrip("/") or "/") if body.path_prefix else None
    concurrency = _concurrency({}, locks, base_path=path_prefix or "/", table_name=name)
    with request.app.state.database.transaction() as session:
        template = TemplateRepo(session).put(
            name, database=body.database, name_pattern=body.name_pattern, path_prefix=path_prefix,
            policies={**policy.explicit(), **concurrency}, queue=body.queue, priority=body.priority)
        changed = TableRepo(session).apply_templates()
        out = {**_out(template, TemplateRepo(session).table_counts()), "changed": changed}
    _forget_cached_identities(request)
    return out


@router.delete("/{name}", status_code=status.HTTP_204_NO_CONTENT, dependencies=[Admin],
               summary="Delete a policy template (its tables fall back to another template or the defaults)",
               responses=problems(*ADMIN, 404, 422))
def delete_template(name: Name, request: Request) -> Response:
    with request.app.state.database.transaction() as session:
        TemplateRepo(session).delete(name)
        TableRepo(session).apply_templates()
    _forget_cached_identities(request)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
