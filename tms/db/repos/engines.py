"""Engines and rollout rules: which Spark and which job code version runs a task, the canary share of each
rule, the results per engine, and the rollback of a failing canary."""
from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tms.errors import ConfigError

from ..errors import ConflictError, NotFoundError
from ..models import Engine, Rollout, Task, TaskAttempt
from ..records import AttemptRecord, EngineRecord, RolloutRecord, TaskRecord, maybe_of, records_of, tasks_of
from ..states import TaskState

BUILTIN = "builtin"  # how results of attempts run by the worker's own job code (no engine) are labelled
FINISHED = ("SUCCEEDED", "FAILED")  # the outcomes an engine answers for (LOST and CANCELLED are not its doing)


@dataclass(frozen=True)
class EngineResults:
    """Finished attempts of one engine in a window: how many, how many failed, and their run times."""
    engine: str
    finished: int
    failed: int
    mean_seconds: float | None
    p50_seconds: float | None
    p95_seconds: float | None

    @property
    def failure_rate(self) -> float:
        return self.failed / self.finished if self.finished else 0.0

    @property
    def success_rate(self) -> float | None:
        return 1 - self.failure_rate if self.finished else None


class EngineRepo:
    def __init__(self, session: Session):
        self.session = session

    def list(self) -> builtins.list[EngineRecord]:
        return records_of(EngineRecord, self.session.scalars(select(Engine).order_by(Engine.name),
                                         execution_options={"populate_existing": True}))

    def get(self, name: str) -> EngineRecord:
        return EngineRecord.of(self._row(name))

    def _row(self, name: str) -> Engine:
        engine = self.session.scalar(select(Engine).where(Engine.name == name)
                                     .execution_options(populate_existing=True))
        if engine is None:
            raise NotFoundError(f"no engine named {name!r}")
        return engine

    def put(self, name: str, **fields: Any) -> EngineRecord:
        """Register the engine, or replace its settings."""
        fields = {**fields, "updated_at": func.now()}
        stmt = (insert(Engine).values(name=name, **fields)
                .on_conflict_do_update(index_elements=[Engine.name], set_=fields).returning(Engine))
        return EngineRecord.of(self.session.scalars(stmt, execution_options={"populate_existing": True}).one())

    def delete(self, name: str) -> None:
        engine = self._row(name)
        users = self.session.scalars(select(Rollout.name).where(
            (Rollout.stable_engine == name) | (Rollout.canary_engine == name)).order_by(Rollout.name)).all()
        if users:
            raise ConflictError(f"engine {name!r} is used by rollout(s) {', '.join(users)}; change them first")
        self.session.delete(engine)
        self.session.flush()

    def record_on_attempt(self, task_id: int, *, fencing_token: int, engine: str, rollout: str) -> None:
        """Record on a just-claimed attempt the engine that runs it and the rollout rule that chose it."""
        self.session.execute(update(TaskAttempt).where(TaskAttempt.task_id == task_id,
                                                       TaskAttempt.fencing_token == fencing_token)
                             .values(engine=engine, rollout=rollout),
                             execution_options={"synchronize_session": False})

    def last_attempt(self, task_id: int) -> AttemptRecord | None:
        return maybe_of(AttemptRecord, self.session.scalar(select(TaskAttempt).where(TaskAttempt.task_id == task_id)
                                                           .order_by(TaskAttempt.attempt.desc()).limit(1)))

    def recent_results(self, window: timedelta) -> dict[str, EngineResults]:
        """`results` of the attempts started within `window` of now (database clock)."""
        return self.results(since=self.session.execute(select(func.now())).scalar_one() - window)

    def results(self, *, since: datetime | None = None, rollout: str | None = None) -> dict[str, EngineResults]:
        """Finished attempts per engine (`builtin`: the worker's own code), those started since `since`, and
        chosen by `rollout` if given."""
        seconds = func.extract("epoch", TaskAttempt.finished_at - TaskAttempt.started_at)
        conditions: list[ColumnElement[bool]] = [TaskAttempt.outcome.in_(FINISHED),
                                                 TaskAttempt.finished_at.is_not(None)]
        if since is not None:
            conditions.append(TaskAttempt.started_at >= since)
        if rollout is not None:
            conditions.append(TaskAttempt.rollout == rollout)
        name = func.coalesce(TaskAttempt.engine, BUILTIN)
        rows = self.session.execute(
            select(name, func.count(), func.count().filter(TaskAttempt.outcome == "FAILED"), func.avg(seconds),
                   func.percentile_cont(0.5).within_group(seconds),
                   func.percentile_cont(0.95).within_group(seconds))
            .where(*conditions).group_by(name)).all()
        return {engine: EngineResults(engine, finished, failed, _float(mean), _float(p50), _float(p95))
                for engine, finished, failed, mean, p50, p95 in rows}


class RolloutRepo:
    def __init__(self, session: Session):
        self.session = session

    def list(self) -> builtins.list[RolloutRecord]:
        return records_of(RolloutRecord, self.session.scalars(select(Rollout).order_by(Rollout.name),
                                         execution_options={"populate_existing": True}))

    def hudi_engine_for(self, *, queue: str | None, database: str, table: str) -> str | None:
        """The engine of kind hudi that runs a table's tasks (its rule's stable engine), None if another does."""
        rule = matching_rule(self.list(), queue=queue, database=database, table=table)
        if rule is None:
            return None
        kind = self.session.scalar(select(Engine.kind).where(Engine.name == rule.stable_engine))
        return rule.stable_engine if kind == "hudi" else None

    def get(self, name: str) -> RolloutRecord:
        return RolloutRecord.of(self._row(name))

    def _row(self, name: str) -> Rollout:
        rollout = self.session.scalar(select(Rollout).where(Rollout.name == name)
                                      .execution_options(populate_existing=True))
        if rollout is None:
            raise NotFoundError(f"no rollout named {name!r}")
        return rollout

    def put(self, name: str, **fields: Any) -> RolloutRecord:
        """Create or replace the rule. It (re)starts active, counting canary results from now: putting a
        rolled-back rule again is how an operator retries a fixed canary."""
        for role in ("stable_engine", "canary_engine"):
            engine = fields.get(role)
            if engine is not None and self.session.scalar(select(Engine.id).where(Engine.name == engine)) is None:
                raise ConfigError(f"{role}: no engine named {engine!r}")
        if fields.get("canary_engine") is not None and fields["canary_engine"] == fields.get("stable_engine"):
            raise ConfigError("canary_engine must differ from stable_engine")
        if fields.get("canary_percent") and fields.get("canary_engine") is None:
            raise ConfigError("canary_percent needs a canary_engine")
        if fields.get("shadow") and not fields.get("canary_percent"):
            raise ConfigError("shadow needs a canary_engine and a canary_percent above 0")
        fields = {**fields, "state": "active", "rolled_back_at": None, "rollback_reason": None,
                  "since": func.now(), "updated_at": func.now()}
        stmt = (insert(Rollout).values(name=name, **fields)
                .on_conflict_do_update(index_elements=[Rollout.name], set_=fields).returning(Rollout))
        try:
            return RolloutRecord.of(self.session.scalars(stmt, execution_options={"populate_existing": True}).one())
        except IntegrityError as exc:  # an engine deleted meanwhile
            raise ConflictError(f"rollout {name!r}: {exc.orig}") from None

    def delete(self, name: str) -> None:
        self.session.delete(self._row(name))
        self.session.flush()

    def active_canaries(self) -> builtins.list[RolloutRecord]:
        """Active rules that send a share of their tasks to a canary, locked for this transaction."""
        return records_of(RolloutRecord, self.session.scalars(
            select(Rollout).where(Rollout.state == "active", Rollout.canary_engine.is_not(None),
                                  Rollout.canary_percent > 0).order_by(Rollout.name)
            .with_for_update(skip_locked=True), execution_options={"populate_existing": True}))

    def roll_back(self, rollout: RolloutRecord, reason: str) -> None:
        self.session.execute(update(Rollout).where(Rollout.id == rollout.id).values(
            state="rolled_back", rolled_back_at=func.now(), rollback_reason=reason, updated_at=func.now()),
            execution_options={"synchronize_session": False})

    def rolled_back(self) -> builtins.list[RolloutRecord]:
        return records_of(RolloutRecord, self.session.scalars(select(Rollout).where(Rollout.state == "rolled_back")))

    def failed_on_canary(self, rollout: RolloutRecord, limit: int = 1000) -> builtins.list[TaskRecord]:
        """FAILED tasks whose last attempt ran on the rule's canary since the rule was last put, locked."""
        last = (select(TaskAttempt.task_id, func.max(TaskAttempt.attempt).label("attempt"))
                .group_by(TaskAttempt.task_id).subquery())
        stmt = (select(Task).join(last, last.c.task_id == Task.id)
                .join(TaskAttempt, and_(TaskAttempt.task_id == Task.id, TaskAttempt.attempt == last.c.attempt))
                .where(Task.state == TaskState.FAILED.value, TaskAttempt.rollout == rollout.name,
                       TaskAttempt.engine == rollout.canary_engine, TaskAttempt.started_at >= rollout.since)
                .order_by(Task.id).limit(limit).with_for_update(of=Task, skip_locked=True))
        return tasks_of(self.session.scalars(stmt, execution_options={"populate_existing": True}))


def matching_rule(rules: Iterable[RolloutRecord], *, queue: str | None, database: str,
                  table: str) -> RolloutRecord | None:
    """The most specific rule whose every set field matches (ties: the first name)."""
    full_name = f"{database}.{table}"
    matching = [r for r in rules
                if (r.queue is None or r.queue == queue) and (r.database is None or r.database == database)
                and (r.table_name is None or r.table_name in (full_name, table))]
    if not matching:
        return None
    return min(matching, key=lambda r: (r.table_name is None, r.database is None, r.queue is None, r.name))


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
