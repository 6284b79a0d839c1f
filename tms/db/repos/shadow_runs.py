"""Shadow canary runs: each comparison of a shadow canary's result with the stable engine's, and what a rollout
rule's shadow runs add up to since the rule was last put."""
from __future__ import annotations

import builtins
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..models import ShadowRun
from ..records import ShadowRunRecord, maybe_of, records_of


@dataclass(frozen=True)
class ShadowResults:
    """A rule's shadow runs since a time: how many ran, and how many of them failed or differed."""
    finished: int
    failed: int
    differed: int


class ShadowRunRepo:
    def __init__(self, session: Session):
        self.session = session

    def record(self, *, task_id: int, attempt: int, rollout: str, canary_engine: str, stable_engine: str,
               outcome: str, first_differing_key: str | None = None, detail: str | None = None,
               groups: builtins.list[dict[str, Any]] | None = None) -> ShadowRunRecord:
        run = ShadowRun(task_id=task_id, attempt=attempt, rollout=rollout, canary_engine=canary_engine,
                        stable_engine=stable_engine, outcome=outcome, first_differing_key=first_differing_key,
                        detail=detail, groups=groups or [])
        self.session.add(run)
        self.session.flush()
        return ShadowRunRecord.of(run)

    def results(self, rollout: str, *, since: datetime) -> ShadowResults:
        rows: dict[str, int] = dict(self.session.execute(
            select(ShadowRun.outcome, func.count()).where(ShadowRun.rollout == rollout, ShadowRun.created_at >= since)
            .group_by(ShadowRun.outcome)).all())
        return ShadowResults(finished=sum(rows.values()), failed=rows.get("failed", 0),
                             differed=rows.get("differed", 0))

    def first_difference(self, rollout: str, *, since: datetime) -> ShadowRunRecord | None:
        """The rule's earliest shadow run since `since` whose result differed from the stable engine's."""
        return maybe_of(ShadowRunRecord, self.session.scalar(
            select(ShadowRun).where(ShadowRun.rollout == rollout, ShadowRun.created_at >= since,
                                    ShadowRun.outcome == "differed").order_by(ShadowRun.id).limit(1)))

    def list(self, *, rollout: str | None = None, task_id: int | None = None,
             limit: int = 100) -> builtins.list[ShadowRunRecord]:
        stmt = select(ShadowRun).order_by(ShadowRun.id.desc()).limit(limit)
        if rollout is not None:
            stmt = stmt.where(ShadowRun.rollout == rollout)
        if task_id is not None:
            stmt = stmt.where(ShadowRun.task_id == task_id)
        return records_of(ShadowRunRecord, self.session.scalars(stmt))
