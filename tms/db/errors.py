"""Errors of the metadata database layer, each with one clear line for users."""


class NotFoundError(LookupError):
    """No such row (table, task, queue, ...)."""


class ConflictError(Exception):
    """The request contradicts what is recorded (already registered, illegal transition, ...)."""


class IllegalTransitionError(ConflictError):
    """A task cannot move from its current state as asked."""
