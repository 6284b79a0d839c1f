"""Event intake: Hudi's native commit callback and TMS's own events.

The bodies are parsed by pydantic from the raw bytes (service.json_body) and the answers written
directly, without FastAPI's response-model pass: these routes are the service's hot path."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response, status
from pydantic import BaseModel

from .. import json_body
from ..auth import WriterCredential, writer_credential
from ..errors import is_json
from ..intake import IncomingEvent, Intake, ReportedEvent
from ..schemas.events import EventBatch, EventIn, HudiCommitCallback, IngestResult, checked_batch, hudi_action
from ..schemas.problems import WRITER, problems

router = APIRouter(prefix="/api/v1", tags=["events"])
BODIES: list[type[BaseModel]] = [HudiCommitCallback, EventIn, EventBatch]  # documented by service.openapi
_ACCEPTED: dict[str, Any] = {
    "status_code": status.HTTP_202_ACCEPTED, "response_model": IngestResult,
    "responses": problems(*WRITER, d403="A bearer token below the operator role",
                          d404="An event names a table that is not registered (only told to trusted senders)")}


def _intake(request: Request) -> Intake:
    return request.app.state.intake


async def _writer(request: Request, credential: Annotated[WriterCredential, Depends(writer_credential)]
                  ) -> WriterCredential:
    """The sender's credential, checked before its body is read: a callback key that is no table's is refused
    at once, so what an unknown sender sends is never parsed."""
    await _intake(request).check_key(credential)
    return credential


Writer = Annotated[WriterCredential, Depends(_writer)]


def _accepted(result: IngestResult) -> Response:
    return Response(result.model_dump_json(), status.HTTP_202_ACCEPTED, media_type="application/json")


@router.post("/hudi/callback", **_ACCEPTED, openapi_extra=json_body.documented(HudiCommitCallback),
             summary="Hudi's native write-commit callback")
async def hudi_callback(credential: Writer, request: Request) -> Response:
    """Point a writer here with `hoodie.write.commit.callback.on=true`,
    `hoodie.write.commit.callback.http.url=<this URL>` and
    `hoodie.write.commit.callback.http.api.key=<TMS_CALLBACK_KEY>` (registering a table answers with them, as
    `writer_options`). The table is found by `basePath`."""
    body = await json_body.parse(request, HudiCommitCallback)
    event = IncomingEvent(table_id=None, base_path=body.basePath, instant=body.commitTime,
                          action=hudi_action(body), state="completed", write_stats=body.hoodieWriteStat,
                          extra_metadata=body.extraMetadata)
    return _accepted(await _intake(request).accept([event], credential, kind="hudi_callback"))


@router.post("/events", **_ACCEPTED, openapi_extra=json_body.documented(EventIn),
             summary="Report one instant state change")
async def post_event(credential: Writer, request: Request) -> Response:
    body = await json_body.parse(request, EventIn)
    return _accepted(await _intake(request).accept([body], credential, kind="api"))


@router.post("/events:batch", **_ACCEPTED, openapi_extra=json_body.documented(EventBatch),
             summary="Report many instant state changes at once")
async def post_events(credential: Writer, request: Request) -> Response:
    """All or nothing: an unknown table or a wrong key rejects the whole batch."""
    events: Sequence[ReportedEvent] | None = None
    if is_json(request.headers.get("content-type")):
        events = checked_batch(await request.body())
    if events is None:
        events = (await json_body.parse(request, EventBatch)).events
    return _accepted(await _intake(request).accept(events, credential, kind="api"))
