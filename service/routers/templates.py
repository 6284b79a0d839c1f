"""Policy templates: rules by database, table-name pattern or path prefix that give tables their policies,
queue, priority and lock options (tms.planning.templates); a table's own settings override them. Putting or
deleting one resolves every table's settings again."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response, status

from tms.db import TemplateRecord, TemplateRepo

from ..actions import templates as actions
from ..auth import Admin, AuthenticatedFirst, Viewer
from ..schemas.problems import ADMIN, VIEWER, problems
from ..schemas.templates import TemplateIn, TemplateOut, TemplatePut

router = APIRouter(route_class=AuthenticatedFirst, prefix="/api/v1/policy-templates", tags=["policy templates"])
Name = Annotated[str, Path(max_length=64, pattern=r"^[A-Za-z0-9_.-]+$", description="The template's name")]


def _out(template: TemplateRecord, counts: dict[str, int]) -> dict[str, Any]:
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
    with request.app.state.database.transaction() as session:
        template, changed = actions.put_template(session, request.app.state.settings, name, body)
        out = {**_out(template, TemplateRepo(session).table_counts()), "changed": changed}
    request.app.state.intake.forget_tables()
    return out


@router.delete("/{name}", status_code=status.HTTP_204_NO_CONTENT, dependencies=[Admin],
               summary="Delete a policy template (its tables fall back to another template or the defaults)",
               responses=problems(*ADMIN, 404, 422))
def delete_template(name: Name, request: Request) -> Response:
    with request.app.state.database.transaction() as session:
        actions.delete_template(session, name)
    request.app.state.intake.forget_tables()
    return Response(status_code=status.HTTP_204_NO_CONTENT)
