"""The metadata database: engine, models, migrations and repositories.

    from tms.db import Database, open_database, TaskRepo, TaskState
    db = open_database(load_settings())
    with db.transaction() as session:
        task, created = TaskRepo(session).create(table_id=1, action="compaction", instant="20250101000000000")
"""
from tms.planning.policy import CleanerPolicy, CompactionStrategy, TablePolicy, TriggerStrategy

from .engine import Database, sqlalchemy_url
from .errors import ConflictError, IllegalTransitionError, NotFoundError
from .models import (
                     Alert,
                     AlertBlacklist,
                     ApiToken,
                     Base,
                     Event,
                     Instance,
                     Lease,
                     RegisteredTable,
                     ResourceQueue,
                     Task,
                     TaskAttempt,
                     Webhook,
)
from .repos.alerts import AlertRepo
from .repos.events import EventRepo, NewEvent
from .repos.instances import InstanceRepo, LeaseRepo
from .repos.queues import QueueRepo
from .repos.tables import TableRepo
from .repos.tasks import TaskRepo
from .repos.tokens import TokenRepo, hash_secret
from .startup import database_url, open_database
from .states import ACTION_SOURCES, TRANSITIONS, OperatorAction, TaskState, can_transition

__all__ = [
    "ACTION_SOURCES", "TRANSITIONS", "Alert", "AlertBlacklist", "AlertRepo", "ApiToken", "Base", "CleanerPolicy",
    "CompactionStrategy", "ConflictError", "Database", "Event", "EventRepo", "IllegalTransitionError", "Instance",
    "InstanceRepo", "Lease", "LeaseRepo", "NewEvent", "NotFoundError", "OperatorAction", "QueueRepo",
    "RegisteredTable", "ResourceQueue", "TablePolicy", "TableRepo", "Task", "TaskAttempt", "TaskRepo",
    "TaskState", "TokenRepo", "TriggerStrategy", "Webhook", "can_transition", "database_url", "hash_secret",
    "open_database", "sqlalchemy_url",
]
