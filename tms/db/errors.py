"""Errors of the metadata database layer, each with one clear line for users."""
from tms.errors import TMSError


class DatabaseError(TMSError):
    """A request the metadata database cannot carry out as asked."""


class NotFoundError(DatabaseError, LookupError):
    """No such row (table, task, queue, ...)."""


class ConflictError(DatabaseError):
    """The request contradicts what is recorded (already registered, illegal transition, ...)."""


class IllegalTransitionError(ConflictError):
    """A task cannot move from its current state as asked."""
