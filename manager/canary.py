"""Canary rollback: the leader compares, for each active rollout rule with a canary, the canary's failure rate
with the stable engine's over the attempts the rule chose since it was last put. Once the canary has finished
`min_tasks` attempts and its failure rate exceeds the stable engine's by more than `failure_margin`, the rule
is rolled back (every task of it runs on the stable engine), `canary_rolled_back` fires, and the tasks that
failed on the canary are made RUNNABLE again at once, on a new series of attempts, for the stable engine.

A shadow rule's canary commits nothing (`worker/shadow.py`): its failure rate is that of its shadow runs, and a
single shadow run whose result differed from the stable engine's rolls the rule back at once, the alert naming
the task, the group and the first record key that differ."""
from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy.orm import Session

from tms.db import AlertRepo, EngineRepo, RolloutRecord, RolloutRepo, ShadowRunRepo, TaskRepo, TaskState
from tms.leadership import LeaderLease

log = logging.getLogger(__name__)
ALERT = "canary_rolled_back"


@dataclass(frozen=True)
class CanaryCheck:
    rolled_back: list[str]  # rollouts rolled back by this check
    retried: list[int]      # tasks made RUNNABLE again for their stable engine


def verdict(rollout: RolloutRecord, *, canary: tuple[int, int],
            stable: tuple[int, int]) -> str | None:
    """Why the canary must be rolled back, or None. `canary`/`stable`: (finished, failed) attempts."""
    finished, failed = canary
    if finished < rollout.min_tasks:
        return None
    canary_rate = failed / finished
    stable_rate = stable[1] / stable[0] if stable[0] else 0.0
    if canary_rate - stable_rate <= rollout.failure_margin:
        return None
    return (f"canary {rollout.canary_engine} failed {failed} of {finished} task(s) ({canary_rate:.0%}) against "
            f"{stable[1]} of {stable[0]} ({stable_rate:.0%}) on stable {rollout.stable_engine}, "
            f"more than the margin of {rollout.failure_margin:.0%}")


def check_canaries(lease: LeaderLease, epoch: int) -> CanaryCheck:
    rolled_back: list[str] = []
    retried: list[int] = []
    with lease.fenced(epoch) as session:
        rollouts = RolloutRepo(session)
        engines = EngineRepo(session)
        alerts = AlertRepo(session)
        shadow_runs = ShadowRunRepo(session)
        for rollout in rollouts.active_canaries():
            results = engines.results(since=rollout.since, rollout=rollout.name)
            stable = results.get(rollout.stable_engine)
            details: dict[str, object] = {}
            if rollout.shadow:
                differed = shadow_runs.first_difference(rollout.name, since=rollout.since)
                shadowed = shadow_runs.results(rollout.name, since=rollout.since)
                canary_results = (shadowed.finished, shadowed.failed)
                if differed is not None:
                    details = {"task_id": differed.task_id, "first_differing_key": differed.first_differing_key}
            else:
                canary = results.get(rollout.canary_engine or "")
                differed = None
                canary_results = (canary.finished, canary.failed) if canary else (0, 0)
            reason = (f"shadow canary {rollout.canary_engine} differed from stable {rollout.stable_engine} on task "
                      f"{differed.task_id}: {differed.detail}" if differed is not None else
                      verdict(rollout, canary=canary_results,
                              stable=(stable.finished, stable.failed) if stable else (0, 0)))
            if reason is None:
                continue
            rollouts.roll_back(rollout, reason)
            alerts.raise_alert(kind=ALERT, severity="critical", subject=f"rollout:{rollout.name}",
                               fingerprint=f"{ALERT}:rollout:{rollout.name}",
                               message=f"rollout {rollout.name} rolled back: {reason}",
                               details={"rollout": rollout.name, "canary_engine": rollout.canary_engine,
                                        "stable_engine": rollout.stable_engine, "shadow": rollout.shadow,
                                        "queue": rollout.queue, "database": rollout.database,
                                        "table": rollout.table_name, **details})
            rolled_back.append(rollout.name)
        for rollout in rollouts.rolled_back():
            retried += _retry_on_stable(session, rollouts, rollout)
    for name in rolled_back:
        log.warning("rollout %s: canary rolled back [epoch %s]", name, epoch)
    if retried:
        log.info("tasks %s: failed on a rolled-back canary; retried on the stable engine [epoch %s]", retried, epoch)
    return CanaryCheck(rolled_back, retried)


def _retry_on_stable(session: Session, rollouts: RolloutRepo, rollout: RolloutRecord) -> list[int]:
    """FAILED tasks whose last attempt ran on the rolled-back canary: RUNNABLE again now, a new series (the
    canary's failure does not count against the task's retries). The claim sends them to the stable engine."""
    tasks = TaskRepo(session)
    retried = []
    for task in rollouts.failed_on_canary(rollout):
        reason = f"retried on the stable engine {rollout.stable_engine}: canary {rollout.canary_engine} rolled back"
        if tasks.transition(task.id, expected_state=TaskState.FAILED, expected_version=task.version,
                            to=TaskState.RUNNABLE, next_attempt_at=None, retry_reason=reason) is None:
            continue
        tasks.start_new_series(task.id)
        retried.append(task.id)
    return retried
