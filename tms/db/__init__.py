"""The metadata database: engine, migrations, and the repositories, which hand out frozen records (records.py)
and change rows through named commands: the ORM rows (models.py) never leave tms/db.

    from tms.db import Database, open_database, TaskRepo, TaskState
    db = open_database(load_settings())
    with db.transaction() as session:
        task, created = TaskRepo(session).create(table_id=1, service="compaction", instant="20250101000000000")
"""
from tms.planning.policy import CleanerPolicy, CompactionStrategy, TablePolicy, TriggerStrategy

from .engine import Database, bounded_idle, sqlalchemy_url
from .errors import ConflictError, IllegalTransitionError, NotFoundError
from .records import (
    AlertRecord,
    AttemptRecord,
    DeliveryRecord,
    DiscoveredRecord,
    EngineRecord,
    EventRecord,
    HealthSampleRecord,
    HealthScore,
    InstanceRecord,
    LeaseRecord,
    MuteRecord,
    QueueRecord,
    RolloutRecord,
    ShadowRunRecord,
    TableRecord,
    TaskRecord,
    TemplateRecord,
    TokenRecord,
    WebhookRecord,
)
from .repos.alerts import AlertRepo, Sighting
from .repos.archive import ArchiveTaskRepo
from .repos.backups import BackupHistory, BackupTaskRepo
from .repos.discovery import DiscoveryRepo
from .repos.engines import BUILTIN, EngineRepo, EngineResults, RolloutRepo, matching_rule
from .repos.events import EventRepo, NewEvent
from .repos.health import FleetHour, HealthRepo
from .repos.instances import InstanceRepo, LeaseRepo
from .repos.queues import QueueRepo
from .repos.retention import Cursor as RetentionCursor
from .repos.retention import Purged, RetentionRepo
from .repos.scan_requests import ScanRequestRepo
from .repos.shadow_runs import ShadowResults, ShadowRunRepo
from .repos.tables import TableRepo
from .repos.tasks import TaskRepo
from .repos.templates import TemplateRepo
from .repos.tokens import TokenRepo, hash_secret
from .repos.ttl import TtlTaskRepo
from .repos.webhooks import MuteRepo, WebhookRepo
from .startup import database_url, open_database
from .states import ACTION_SOURCES, TRANSITIONS, OperatorAction, TaskState, can_transition
from .wakeups import TASK_RUNNABLE, Listener

__all__ = [
    "ACTION_SOURCES", "BUILTIN", "TASK_RUNNABLE", "TRANSITIONS",
    "AlertRecord", "AttemptRecord", "EngineRecord", "EventRecord", "InstanceRecord", "MuteRecord", "QueueRecord",
    "RolloutRecord", "TableRecord", "TaskRecord", "TemplateRecord", "DeliveryRecord", "DiscoveredRecord",
    "HealthSampleRecord", "HealthScore", "LeaseRecord", "ShadowRunRecord", "TokenRecord", "WebhookRecord",
    "AlertRepo", "ArchiveTaskRepo", "BackupTaskRepo", "DiscoveryRepo", "EngineRepo", "EventRepo", "HealthRepo",
    "InstanceRepo", "LeaseRepo", "MuteRepo", "QueueRepo", "RetentionRepo", "RolloutRepo", "ScanRequestRepo",
    "ShadowRunRepo", "TableRepo", "TaskRepo", "TemplateRepo", "TokenRepo", "TtlTaskRepo", "WebhookRepo",
    "BackupHistory", "EngineResults", "FleetHour", "NewEvent", "Purged", "RetentionCursor", "ShadowResults", "Sighting",
    "CleanerPolicy", "CompactionStrategy", "TablePolicy", "TriggerStrategy",
    "ConflictError", "IllegalTransitionError", "NotFoundError", "OperatorAction", "TaskState",
    "Database", "Listener", "bounded_idle", "can_transition", "database_url", "hash_secret", "matching_rule",
    "open_database", "sqlalchemy_url",
]
