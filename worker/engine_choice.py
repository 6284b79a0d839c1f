"""Which engine runs a claimed task: the most specific rollout rule matching it (a table's rule before its
database's, before its queue's, before a rule matching every task) names a stable engine and, for an active
rule, a canary engine that gets `canary_percent` of the tasks. Whether a task is in the canary share is a
hash of the rule and the task id, so a task keeps its side on every claim, except that a task whose last
attempt failed on the canary runs its retry on the stable engine. No rule: the worker's own job code.

A shadow rule's canary share runs on the stable engine too, and the canary engine runs the same plan in
shadow on a scratch copy (`worker/shadow.py`): only for the services whose results can be compared row by row
(compaction and clustering, `JAVA_EXECUTED` in the registry); the others of its canary share run on the stable
engine alone."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sqlalchemy.orm import Session

from tms.db import EngineRecord, EngineRepo, RolloutRecord, RolloutRepo, TableRecord, matching_rule
from tms.execute.engine_code import EngineSpec
from tms.table_services import JAVA_EXECUTED


@dataclass(frozen=True)
class EngineChoice:
    engine: EngineSpec
    rollout: str
    canary: bool
    shadow: EngineSpec | None = None  # a shadow rule's canary, run on a scratch copy beside `engine`


def in_canary(rollout: str, task_id: int, percent: int) -> bool:
    """Whether task `task_id` is in the `percent` share of `rollout`'s tasks that run on its canary."""
    digest = hashlib.sha256(f"{rollout}:{task_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 100 < percent


def spec_of(engine: EngineRecord) -> EngineSpec:
    return EngineSpec(name=engine.name, code_path=engine.code_path,
                      spark_submit=engine.spark_submit or (f"{engine.spark_home}/bin/spark-submit"
                                                           if engine.spark_home else None),
                      spark_conf=dict(engine.spark_conf or {}), version_key=engine.updated_at.isoformat(),
                      kind=engine.kind)


def choose_engine(session: Session, *, task_id: int, table: TableRecord, queue: str | None,
                  service: str) -> EngineChoice | None:
    rule = matching_rule(RolloutRepo(session).list(), queue=queue, database=table.database, table=table.name)
    if rule is None:
        return None
    repo = EngineRepo(session)
    canary = (rule.state == "active" and rule.canary_engine is not None
              and in_canary(rule.name, task_id, rule.canary_percent) and not _failed_on(repo, task_id, rule))
    stable = spec_of(repo.get(rule.stable_engine))
    if canary and rule.canary_engine and rule.shadow:
        shadow = spec_of(repo.get(rule.canary_engine)) if service in JAVA_EXECUTED else None
        return EngineChoice(engine=stable, rollout=rule.name, canary=False, shadow=shadow)
    if canary and rule.canary_engine:
        return EngineChoice(engine=spec_of(repo.get(rule.canary_engine)), rollout=rule.name, canary=True)
    return EngineChoice(engine=stable, rollout=rule.name, canary=False)


def _failed_on(repo: EngineRepo, task_id: int, rule: RolloutRecord) -> bool:
    last = repo.last_attempt(task_id)
    return last is not None and last.engine == rule.canary_engine and last.outcome != "SUCCEEDED"
