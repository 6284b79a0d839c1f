"""Errors of plan execution, each one clear line for users."""
from __future__ import annotations

from tms.errors import TMSError
from tms.hudi.timeline.instant import Instant


class ExecutionError(TMSError):
    """A plan that cannot be run, or an attempt that must stop."""


class PlanHeldError(ExecutionError):
    """A plan that must not run yet: writes that started before it are still pending."""

    def __init__(self, instant: str, action: str, blockers: list[Instant]):
        self.instant = instant
        self.blockers = blockers
        names = ", ".join(f"{b.timestamp} ({b.action} {b.state.name.lower()})" for b in blockers)
        super().__init__(f"{action} {instant} is held by writes still pending before it: {names}; "
                         "it runs once they complete or are rolled back")


class UnsafePlanError(ExecutionError):
    """A plan that names a path outside its table (`..`, an absolute path or URL elsewhere, a symbolic link out
    of it): refused before anything is done, and never retried."""


# A job's exit status when a conflicting write won: its attempt and plan were rolled back, and the task ends with
# reason `conflict` (tms.hudi.timeline.conflicts.CONFLICT_REASON), never retried (the next plan takes the new data).
CONFLICT_EXIT_STATUS = 3


class FencingError(ExecutionError):
    """This attempt lost its lease: another attempt owns the plan, so this one must not touch the timeline."""
