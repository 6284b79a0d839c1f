"""The manager's leader, alerts, mutes (alert blacklists) and webhooks."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response, status

from tms.db import AlertRecord, AlertRepo, MuteRepo, WebhookRepo

from ..actions.alerts import acknowledge_alert, add_mute
from ..auth import Admin, AuthenticatedFirst, Operator, Viewer
from ..manager_view import manager_status, webhook_out
from ..pagination import AlertsCursor, decode_cursor, page
from ..schemas.common import Id, Limit, Offset, ShortText
from ..schemas.manager import (
    AlertOut,
    AlertPage,
    AlertType,
    DeliveryPage,
    ManagerOut,
    MuteIn,
    MuteOut,
    Severity,
    WebhookChanges,
    WebhookIn,
    WebhookOut,
)
from ..schemas.problems import ADMIN, OPERATOR, VIEWER, problems

router = APIRouter(route_class=AuthenticatedFirst, prefix="/api/v1")


@router.get("/manager", response_model=ManagerOut, dependencies=[Viewer], tags=["manager"],
            responses=problems(*VIEWER), summary="The leading manager, its epoch and the standbys")
def get_manager(request: Request) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        return manager_status(session, request.app.state.settings)


@router.get("/alerts", response_model=AlertPage, dependencies=[Viewer], tags=["alerts"],
            responses=problems(*VIEWER, 422), summary="Alerts, newest first")
def list_alerts(request: Request, table_id: Annotated[Id | None, Query()] = None,
                type: Annotated[AlertType | None, Query(description="The alert type")] = None,
                kind: Annotated[ShortText | None, Query(description="The alert type (older name)")] = None,
                severity: Annotated[Severity | None, Query()] = None,
                state: Annotated[str | None, Query(pattern="^(firing|resolved)$")] = None,
                muted: bool | None = None, subject: Annotated[ShortText | None, Query()] = None,
                open_only: bool = False, since: datetime | None = None,
                limit: Limit = 50, offset: Offset = 0, cursor: AlertsCursor = None) -> dict[str, Any]:
    """Walk every page with `cursor` (each page's `next_cursor`), or with `offset`."""
    before_id = decode_cursor(cursor)
    with request.app.state.database.transaction() as session:
        alerts, total = AlertRepo(session).find(
            table_id=table_id, kind=type.value if type else kind, severity=severity.value if severity else None,
            open_only=open_only, state=state, muted=muted, subject=subject, since=since, limit=limit + 1,
            offset=offset, before_id=before_id, count=cursor is None)
        return page("alerts", alerts, limit, total, offset, cursor)


@router.post("/alerts/{alert_id}:acknowledge", response_model=AlertOut, dependencies=[Operator], tags=["alerts"],
             responses=problems(*OPERATOR, 404, 409, 422, d409="An alert of a type that resolves by itself"),
             summary="Acknowledge an instance_down alert: the process is gone for good")
def acknowledge(alert_id: Annotated[Id, Path()], request: Request) -> AlertRecord:
    """The instance is forgotten (its row removed, unless it beats again) and the alert resolves. An alert
    already resolved is answered as it is."""
    with request.app.state.database.transaction() as session:
        return acknowledge_alert(session, request.app.state.settings, alert_id)


# --- mutes -----------------------------------------------------------------------------------------
@router.post("/mutes", status_code=status.HTTP_201_CREATED, response_model=MuteOut, dependencies=[Admin],
             tags=["alerts"], responses=problems(*ADMIN, 400, 404, 413, 422),
             summary="Mute alerts by table, database, owner or queue (all types or some)")
def create_mute(body: MuteIn, request: Request) -> MuteOut:
    with request.app.state.database.transaction() as session:
        return MuteOut.model_validate(add_mute(session, body))


@router.get("/mutes", response_model=list[MuteOut], dependencies=[Viewer], tags=["alerts"],
            responses=problems(*VIEWER, 422), summary="Mutes in force (with expired ones on request)")
def list_mutes(request: Request, include_expired: bool = False) -> list[MuteOut]:
    with request.app.state.database.transaction() as session:
        return [MuteOut.model_validate(m) for m in MuteRepo(session).list(include_expired=include_expired)]


@router.delete("/mutes/{mute_id}", status_code=status.HTTP_204_NO_CONTENT, dependencies=[Admin], tags=["alerts"],
               responses=problems(*ADMIN, 404, 422), summary="Delete a mute")
def delete_mute(mute_id: Annotated[Id, Path()], request: Request) -> Response:
    with request.app.state.database.transaction() as session:
        MuteRepo(session).delete(mute_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


# --- webhooks --------------------------------------------------------------------------------------
def _webhook_fields(values: dict[str, Any]) -> dict[str, Any]:
    if "url" in values:
        values["url"] = str(values["url"])
    if "alert_types" in values:
        values["kinds"] = [str(t) for t in values.pop("alert_types")]
    for name in ("min_severity", "format"):
        if name in values:
            values[name] = str(values[name])
    return values


@router.post("/webhooks", status_code=status.HTTP_201_CREATED, response_model=WebhookOut, dependencies=[Admin],
             tags=["webhooks"],
             responses=problems(*ADMIN, 400, 413, 422), summary="Send alerts (firing and resolved) to a URL")
def create_webhook(body: WebhookIn, request: Request) -> WebhookOut:
    with request.app.state.database.transaction() as session:
        return webhook_out(WebhookRepo(session).create(**_webhook_fields(body.model_dump())))


@router.get("/webhooks", response_model=list[WebhookOut], dependencies=[Admin], tags=["webhooks"],
            responses=problems(*ADMIN), summary="Webhooks (without their secrets)")
def list_webhooks(request: Request) -> list[WebhookOut]:
    with request.app.state.database.transaction() as session:
        return [webhook_out(h) for h in WebhookRepo(session).list()]


@router.patch("/webhooks/{webhook_id}", response_model=WebhookOut, dependencies=[Admin], tags=["webhooks"],
              responses=problems(*ADMIN, 400, 404, 413, 422), summary="Change a webhook")
def update_webhook(webhook_id: Annotated[Id, Path()], body: WebhookChanges, request: Request) -> WebhookOut:
    with request.app.state.database.transaction() as session:
        changes = _webhook_fields(body.model_dump(exclude_unset=True))
        return webhook_out(WebhookRepo(session).update(webhook_id, **changes))


@router.delete("/webhooks/{webhook_id}", status_code=status.HTTP_204_NO_CONTENT, dependencies=[Admin],
               tags=["webhooks"], responses=problems(*ADMIN, 404, 422), summary="Delete a webhook (and its deliveries)")
def delete_webhook(webhook_id: Annotated[Id, Path()], request: Request) -> Response:
    with request.app.state.database.transaction() as session:
        WebhookRepo(session).delete(webhook_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/webhooks/{webhook_id}/deliveries", response_model=DeliveryPage, dependencies=[Admin],
            tags=["webhooks"],
            responses=problems(*ADMIN, 404, 422), summary="A webhook's deliveries with their attempts, newest first")
def list_deliveries(webhook_id: Annotated[Id, Path()], request: Request, limit: Limit = 50,
                    offset: Offset = 0) -> dict[str, Any]:
    with request.app.state.database.transaction() as session:
        rows, total = WebhookRepo(session).deliveries(webhook_id, limit=limit, offset=offset)
        return {"items": rows, "total": total, "limit": limit, "offset": offset}
