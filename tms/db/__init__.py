"""The metadata database: engine, models, migrations and repositories.

    from tms.db import Database, open_database, TaskRepo, TaskState
    db = open_database(load_settings())
    with db.transaction() as session:
        task, created = TaskRepo(session).create(table_id=1, service="compaction", instant="20250101000000000")
"""
from tms.planning.policy import CleanerPolicy, CompactionStrategy, TablePolicy, TriggerStrategy

from .engine import Database, bounded_idle, sqlalchemy_url
from .errors import ConflictError, IllegalTransitionError, NotFoundError
from .models import (
                     Alert,
                     ApiToken,
                     Base,
                     DiscoveredTable,
                     Engine,
                     Event,
                     HealthRecord,
                     HealthSample,
                     Instance,
                     Lease,
                     Mute,
                     PolicyTemplate,
                     RegisteredTable,
                     ResourceQueue,
                     Rollout,
                     ScanRequest,
                     ShadowRun,
                     Task,
                     TaskAttempt,
                     Webhook,
                     WebhookDelivery,
)
from .records import TableRecord, TaskRecord
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

__all__ = [
    "ACTION_SOURCES", "BUILTIN", "Engine", "EngineRepo", "EngineResults", "Rollout", "RolloutRepo", "matching_rule",
    "Alert", "AlertRepo", "BackupHistory", "BackupTaskRepo", "ApiToken", "Base", "CleanerPolicy", "CompactionStrategy",
    "ConflictError", "Database", "DiscoveredTable", "DiscoveryRepo",
    "Event", "EventRepo", "IllegalTransitionError", "Instance", "InstanceRepo",
    "Lease", "LeaseRepo", "Mute", "MuteRepo", "PolicyTemplate", "TemplateRepo",
    "NewEvent", "FleetHour", "HealthRecord", "HealthRepo", "HealthSample", "NotFoundError", "OperatorAction",
    "Purged", "QueueRepo", "RetentionCursor", "RetentionRepo",
    "RegisteredTable", "ResourceQueue", "ScanRequest", "ScanRequestRepo", "ShadowResults", "ShadowRun",
    "ShadowRunRepo", "Sighting", "TRANSITIONS",
    "TablePolicy", "TableRecord", "TableRepo", "TaskRecord",
    "Task", "TaskAttempt", "TaskRepo", "TaskState", "TokenRepo", "TriggerStrategy",
    "TtlTaskRepo",
    "ArchiveTaskRepo",
    "Webhook", "WebhookDelivery", "WebhookRepo", "bounded_idle", "can_transition", "database_url", "hash_secret",
    "open_database", "sqlalchemy_url",
]
