"""Event intake: Hudi's native commit callback and TMS's own events."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, status

from ..auth import WriterCredential, writer_credential
from ..intake import IncomingEvent, Intake
from ..schemas.events import EventBatch, EventIn, HudiCommitCallback, IngestResult, hudi_action

router = APIRouter(prefix="/api/v1", tags=["events"])
Writer = Annotated[WriterCredential, Depends(writer_credential)]
_ACCEPTED: dict[str, Any] = {"status_code": status.HTTP_202_ACCEPTED, "response_model": IngestResult}


def _intake(request: Request) -> Intake:
    return request.app.state.intake


def _incoming(event: EventIn) -> IncomingEvent:
    return IncomingEvent(table_id=event.table_id, base_path=event.base_path, instant=event.instant,
                         action=event.action, state=event.state.value, completion_time=event.completion_time,
                         write_stats=event.write_stats, extra_metadata=event.extra_metadata)


@router.post("/hudi/callback", **_ACCEPTED, summary="Hudi's native write-commit callback")
async def hudi_callback(body: HudiCommitCallback, credential: Writer, request: Request) -> IngestResult:
    """Point a writer here with `hoodie.write.commit.callback.on=true`,
    `hoodie.write.commit.callback.http.url=<this URL>` and
    `hoodie.write.commit.callback.http.api.key=<TMS_CALLBACK_KEY>`. The table is found by `basePath`."""
    event = IncomingEvent(table_id=None, base_path=body.basePath, instant=body.commitTime,
                          action=hudi_action(body), state="completed", write_stats=body.hoodieWriteStat,
                          extra_metadata=body.extraMetadata)
    return await _intake(request).accept([event], credential, kind="hudi_callback")


@router.post("/events", **_ACCEPTED, summary="Report one instant state change")
async def post_event(body: EventIn, credential: Writer, request: Request) -> IngestResult:
    return await _intake(request).accept([_incoming(body)], credential, kind="api")


@router.post("/events:batch", **_ACCEPTED, summary="Report many instant state changes at once")
async def post_events(body: EventBatch, credential: Writer, request: Request) -> IngestResult:
    """All or nothing: an unknown table or a wrong key rejects the whole batch."""
    return await _intake(request).accept([_incoming(e) for e in body.events], credential, kind="api")

