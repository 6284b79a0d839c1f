"""Errors of the planning library: each carries one clear line for users."""
from tms.errors import TMSError


class PlanningError(TMSError):
    """A planning request that cannot be carried out as asked (wrong table type, unknown instant, ...)."""


class CompensationError(PlanningError):
    """A held compaction plan that can no longer be compensated: it went inflight or completed while late
    delta commits were still being added, or a late commit rewrote a planned file group. Alert-worthy: the
    data of a late commit may be lost unless someone looks."""
