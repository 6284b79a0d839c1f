"""A shadow canary's run of a claimed task (a shadow rollout rule's canary share): before the stable engine
executes the plan on the table, the plan's file slices and the timeline are copied to a scratch base path and the
canary engine executes the same plan there, as a dedicated job under the task's lease. Once the stable engine
has completed the instant on the table, the two results are compared (`tms.execute.shadow_compare`) and the
comparison is recorded as a `ShadowRun`; the manager's leader rolls back a rule whose shadow differed.

Only the stable engine's result is ever committed: the canary writes to the scratch copy alone. A scratch copy
is removed once compared, except one that differed (kept for the operator, its path in the run's detail).
The canary's failure never fails the task: it is recorded, and the stable engine runs as it would have."""
from __future__ import annotations

import logging
import posixpath
from dataclasses import replace

from tms.db import Database, ShadowRunRepo
from tms.execute.fencing import redact_fence_keys
from tms.execute.shadow_compare import Comparison, compare_instant
from tms.execute.shadow_copy import scratch_copy
from tms.hudi.context import HudiContext
from tms.hudi.table.hudi_table import HudiTable

from .claim import ClaimedTask

log = logging.getLogger(__name__)


class ShadowAttempt:
    def __init__(self, claimed: ClaimedTask, root: str, database: Database, context: HudiContext):
        if claimed.shadow is None:
            raise ValueError("a shadow attempt needs a task claimed with a shadow canary")
        self.claimed = claimed
        self.database = database
        self.context = context
        table = posixpath.basename(claimed.base_path.rstrip("/")) or "table"
        self.scratch_dir = posixpath.join(root.rstrip("/"), f"task-{claimed.task_id}-attempt-{claimed.attempt}")
        self.scratch = posixpath.join(self.scratch_dir, table)
        self.error: str | None = None  # why the canary's run failed, once it did

    @property
    def engine(self) -> str:
        assert self.claimed.shadow is not None
        return self.claimed.shadow.engine.name

    def prepare(self) -> ClaimedTask:
        """Copy the table's plan inputs and timeline to the scratch path; the task as the canary runs it there
        (its own engine, no lock: nobody else writes the copy)."""
        assert self.claimed.shadow is not None
        self._remove()  # what an earlier attempt of this one left
        table = HudiTable.load(self.claimed.base_path, context=self.context)
        copy = scratch_copy(table, self.claimed.instant, self.scratch)
        log.info("task %s: shadow canary %s runs on a scratch copy at %s (%s file(s), %.1f MB)",
                 self.claimed.task_id, self.engine, self.scratch, copy.files, copy.bytes_copied / 1e6)
        return replace(self.claimed, base_path=self.scratch, engine=self.claimed.shadow.engine,
                       concurrency_options={}, shadow=None)

    def failed(self, reason: str) -> None:
        """The canary could not produce a result: recorded as a failed shadow run."""
        self.error = reason
        self._record("failed", detail=reason)
        self._remove()

    def conclude(self, *, stable_succeeded: bool) -> None:
        """After the stable engine's job: compare (if both completed the instant) and record, then clean up.
        Never raises: the shadow's troubles are not the task's."""
        try:
            self._conclude(stable_succeeded)
        except Exception as exc:
            log.warning("task %s: the shadow canary's run could not be concluded: %s", self.claimed.task_id, exc)

    def _conclude(self, stable_succeeded: bool) -> None:
        if self.error is not None:
            return
        if not stable_succeeded:  # nothing to compare with; the task's retry runs the shadow again
            self._remove()
            return
        try:
            comparison = compare_instant(HudiTable.load(self.claimed.base_path, context=self.context),
                                         HudiTable.load(self.scratch, context=self.context),
                                         self.claimed.instant)
        except Exception as exc:  # a shadow that completed nothing readable is the canary's failure
            self.failed(f"the shadow result cannot be compared: {exc}")
            return
        self._record_comparison(comparison)

    def _record_comparison(self, comparison: Comparison) -> None:
        if comparison.agreed:
            self._record("agreed", groups=comparison.groups)
            self._remove()
            return
        detail = f"{comparison.detail} (scratch copy kept at {self.scratch})"
        log.warning("task %s: shadow canary %s differs from the stable engine: %s", self.claimed.task_id,
                    self.engine, detail)
        self._record("differed", groups=comparison.groups, detail=detail,
                     first_differing_key=comparison.first_differing_key)

    def _record(self, outcome: str, detail: str | None = None, **fields) -> None:
        c = self.claimed
        assert c.shadow is not None and c.engine is not None
        if detail is not None:
            fields["detail"] = redact_fence_keys(detail, c.fence_key)
        with self.database.transaction() as session:
            ShadowRunRepo(session).record(task_id=c.task_id, attempt=c.attempt, rollout=c.shadow.rollout,
                                          canary_engine=self.engine, stable_engine=c.engine.name, outcome=outcome,
                                          **fields)

    def _remove(self) -> None:
        try:
            self.context.open_storage(self.scratch_dir).delete_tree("")
        except Exception as exc:  # only scratch space
            log.warning("task %s: cannot remove the shadow copy at %s: %s", self.claimed.task_id, self.scratch_dir,
                        exc)
