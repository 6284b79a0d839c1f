"""TMS settings: environment variables `TMS_*`, then an optional TOML or YAML file named by
`TMS_CONFIG_FILE`, then the defaults below. Every role reads its configuration from here.

`Settings` is flat: one field per `TMS_*` variable (and config-file key), which is the contract operators and
the configuration reference see. Each role reads its own typed, frozen view of it, derived from the flat fields
(never set on its own): `settings.service`, `settings.worker`, `settings.planner`, `settings.manager`; a view's
field is the flat one without the role's prefix (`settings.worker.slots` is TMS_WORKER_SLOTS) or, if it has
none, the flat one's name (`settings.worker.merge_memory_bytes`). What every process reads stays on `Settings`
itself (`SHARED_SETTINGS`)."""
from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
    YamlConfigSettingsSource,
)

from tms.display import check_zone
from tms.errors import ConfigError
from tms.execute.parts import DEFAULT_PART_BYTES
from tms.hudi.errors import HudiError
from tms.hudi.timeline.zone import zone_named
from tms.storage_roots import StorageRootOptions, check_roots
from tms.timeline_zone import local_zone

CONFIG_FILE_ENV = "TMS_CONFIG_FILE"

PlannerService = Literal["compaction", "clustering", "clean", "rollback", "archive"]


class RoleSettings(BaseModel):
    """A role's view of the flat settings: built from them (`of`), frozen. A field reads the flat setting
    PREFIX + its name if there is one, else the flat setting of its own name (see `flat_name`)."""
    model_config = ConfigDict(frozen=True, extra="forbid")
    PREFIX: ClassVar[str] = ""

    @classmethod
    def flat_name(cls, name: str) -> str:
        """The `Settings` field (TMS_<it upper-cased>) the view's field `name` reads."""
        prefixed = cls.PREFIX + name
        return prefixed if prefixed in Settings.model_fields else name

    @classmethod
    def of(cls, settings: Settings) -> Self:
        return cls.model_validate({name: getattr(settings, cls.flat_name(name)) for name in cls.model_fields})


class ServiceSettings(RoleSettings):
    """The service (`tms serve`): how it listens, authenticates and bounds requests."""
    host: str
    port: int
    public_url: str | None
    callback_key: SecretStr | None
    admin_token: SecretStr | None
    max_body_bytes: int
    max_bulk_body_bytes: int
    cache_seconds: float
    discovery_admit_callbacks: bool
    engine_code_dir: Path | None


class WorkerSettings(RoleSettings):
    """The worker (`tms worker`) and the jobs it runs; the retries its failed attempts get."""
    PREFIX: ClassVar[str] = "worker_"
    slots: int
    light_slots: int
    poll_seconds: float
    lease_seconds: float
    job_timeout_seconds: float
    runner: Literal["spark", "python"]
    service_url: str | None
    shadow_root: str | None
    driver_memory_mb: int
    driver_cores: int
    max_executors_per_table: int
    default_master: str
    default_warm_engine: bool
    fence_patience_seconds: float
    merge_memory_bytes: int
    part_bytes: int
    task_max_failures: int
    retry_backoff_seconds: float
    retry_backoff_max_seconds: float
    retry_max_attempts: int


class PlannerSettings(RoleSettings):
    """The planner (`tms planner`), and the planning on request (the service's, the manager's)."""
    PREFIX: ClassVar[str] = "planner_"
    services: tuple[PlannerService, ...]
    threads: int
    poll_seconds: float
    tick_seconds: float
    scan_seconds: float
    clean_commits: int
    full_pass_hours: float
    cached_tables: int
    cache_mb: int
    watch_timelines: bool


class ManagerSettings(RoleSettings):
    """The manager (`tms manager`): its leader's periodic work (alert rules, retention, health scores, webhooks,
    canaries, discovery and catalog syncs), which the service also does on request."""
    PREFIX: ClassVar[str] = "manager_"
    lease_seconds: float
    heartbeat_seconds: float
    reconcile_seconds: float
    retry_seconds: float
    monitor_seconds: float
    backup_seconds: float
    ttl_seconds: float
    health_seconds: float
    retention_seconds: float
    canary_seconds: float
    metrics_port: int | None
    health_batch: int
    health_history_days: float
    retention_days: float
    retention_events_days: float
    retention_batch_rows: int
    retention_pause_seconds: float
    monitor_unclaimed_seconds: float
    monitor_unplanned_seconds: float
    monitor_hold_seconds: float
    monitor_instance_missing_seconds: float
    canary_failure_margin: float
    canary_min_tasks: int
    webhook_poll_seconds: float
    webhook_timeout_seconds: float
    webhook_backoff_seconds: float
    webhook_max_age_seconds: float
    discovery_scan_seconds: float
    discovery_max_depth: int
    glue_endpoint_url: str | None
    glue_region: str
    glue_sync_databases: tuple[str, ...]
    glue_sync_seconds: float
    hive_metastore_uri: str | None
    hive_sync_databases: tuple[str, ...]
    hive_sync_seconds: float


# The flat settings no role's view holds: every process reads them. Each other flat setting is read through
# exactly one view (tests/service/test_svc_config.py checks).
SHARED_SETTINGS = frozenset({
    "database_url", "data_dir", "storage_roots", "storage_root_options", "backup_roots", "log_level",
    "db_pool_size", "migrate_on_start", "heartbeat_seconds", "timeline_local_timezone", "display_timezone",
    "orphan_safety_hours",
})
ROLE_VIEWS: dict[str, type[RoleSettings]] = {
    "service": ServiceSettings, "worker": WorkerSettings, "planner": PlannerSettings, "manager": ManagerSettings}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TMS_", extra="ignore")

    database_url: str | None = Field(
        None, description="PostgreSQL URL; unset: an embedded PostgreSQL is started under data_dir")
    data_dir: Path = Field(Path(".tms"), description="Local state, such as the embedded database")
    storage_roots: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Comma-separated path or URL prefixes tables may live under; empty: any")
    storage_root_options: dict[str, StorageRootOptions] = Field(
        default_factory=dict,
        description="How each storage root is reached: a JSON object (a table in the config file) of root -> "
                    "options (StorageRootOptions below); each root one of TMS_STORAGE_ROOTS; credentials named "
                    "by environment variable or file, never given here; unset roots: the store client's defaults")
    backup_roots: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Comma-separated path or URL prefixes backup destinations may lie under, besides the storage "
                    "roots; both empty: any")
    callback_key: SecretStr | None = Field(
        None, description="Service-wide key Hudi writers send in the HUDI-CALLBACK-KEY header")
    admin_token: SecretStr | None = Field(None, description="A bearer token with the admin role")
    max_body_bytes: int = Field(
        1024 * 1024, gt=0, description="Largest request body of a route (413 beyond, before it is parsed), but for "
                                       "those TMS_MAX_BULK_BODY_BYTES bounds")
    max_bulk_body_bytes: int = Field(
        10 * 1024 * 1024, gt=0, description="Largest request body of the routes taking many items at once: the "
                                            "event intake (POST /api/v1/hudi/callback, /events, /events:batch) "
                                            "and POST /api/v1/tables/{id}/orphans:remove")
    public_url: str | None = Field(
        None, pattern=r"^https?://[^\s/]+(/\S*)?$",
        description="The URL writers and users reach the service at (http[s]://host[:port][/prefix]): the commit "
                    "callback's URL the service gives for a table's writers (<it>/api/v1/hudi/callback); unset: "
                    "the URL each request came in by")
    host: str = Field("127.0.0.1", description="Interface `tms serve` listens on")
    port: int = Field(8080, ge=0, le=65535, description="Port `tms serve` listens on")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        "INFO", description="Level of every process's log (any case)")
    db_pool_size: int = Field(
        10, ge=1, description="Database connections per process and pool (the service: up to 3x this, and 4 more "
                              "for jobs' fence checks)")
    migrate_on_start: bool = Field(True, description="Upgrade the database schema to head on start")
    cache_seconds: float = Field(
        10.0, ge=0, description="How long a verified API token, or a table's identity and callback key, "
                                "is reused without a database look-up")
    heartbeat_seconds: float = Field(10.0, gt=0, description="Instance heartbeat interval")
    timeline_local_timezone: str | None = Field(
        None, validate_default=True,
        description="The zone (IANA name, such as Asia/Shanghai) the Hudi writers of tables with a LOCAL timeline "
                    "(hoodie.table.timeline.timezone LOCAL or unset, Hudi's default) run in: their instant times "
                    "are wall-clock times there; unset: this host's local zone (TZ, else /etc/localtime)")
    display_timezone: str = Field(
        "UTC", description="The zone (IANA name, such as Europe/Paris) the dashboard and the ops commands show "
                           "times in, each labelled with it")

    # The worker (`tms worker`): see worker/ and docs/operating/worker.md.
    worker_slots: int = Field(2, ge=1, description="Jobs one worker process runs at the same time")
    worker_light_slots: int = Field(
        2, ge=0, description="Short jobs that run no Spark (archival) one worker process runs at the same time beside "
                             "its slots, not counted against a queue's capacity; 0: they take a slot as other jobs do")
    worker_poll_seconds: float = Field(2.0, gt=0, description="How often an idle worker looks for runnable tasks")
    worker_lease_seconds: float = Field(
        60.0, ge=1, description="A claimed task's lease; the worker renews it every quarter of this while the "
                                "job runs, and a cancel is noticed at the next renewal")
    fence_patience_seconds: float = Field(
        60.0, gt=0, description="How long a job keeps asking a service that does not answer its fence check "
                                "before it counts its lease as lost (the worker renews the lease meanwhile)")
    worker_job_timeout_seconds: float = Field(
        4 * 3600.0, gt=0, description="A job running longer is killed and its attempt fails")
    worker_runner: Literal["spark", "python"] = Field(
        "spark", description="spark: spark-submit to the queue's master; python: run the plan in a plain "
                             "Python process without Spark (small tables, machines without Java)")
    worker_service_url: str | None = Field(
        None, description="The service URL a job's driver calls to check its lease (the fence); "
                          "unset: http://<host>:<port> of this configuration")
    merge_memory_bytes: int = Field(
        256 * 1024 * 1024, ge=16 * 1024 * 1024,
        description="Memory budget of one compaction's merge of a file group, where neither the job's options nor "
                    "the table set hoodie.memory.compaction.max.size: log records past it spill to local disk")
    worker_shadow_root: str | None = Field(
        None, description="Where a shadow canary copies a plan's file slices and timeline to run on (a folder or a "
                          "storage URL the queue's Spark executors reach); unset: the data directory's shadow/")
    worker_part_bytes: int = Field(
        DEFAULT_PART_BYTES, ge=1024 * 1024,
        description="The bytes one part of a big compaction reads at most: a Spark job runs a plan's operations "
                    "in parts (a Spark task each) of up to this many bytes, the operations of a part one after "
                    "the other, each merge within its memory budget; a failed part is attempted again alone")
    worker_task_max_failures: int = Field(
        4, ge=1, description="Attempts of one part (Spark task) of a job before the job fails (spark.task."
                             "maxFailures, on a local master too; an engine's or queue's conf overrides it); the "
                             "plain Python job attempts a failed operation as often")
    worker_driver_memory_mb: int = Field(1024, ge=256, description="spark.driver.memory of every job (MB)")
    worker_driver_cores: int = Field(1, ge=1, description="spark.driver.cores of every job")
    worker_max_executors_per_table: int = Field(
        16, ge=1, description="At most this many executors for one table's job, whatever its queue allows")
    worker_default_master: str = Field(
        "local[*]", description="Master of the `local` queue the worker creates when no queue exists")
    worker_default_warm_engine: bool = Field(
        True, description="The `local` queue the worker creates keeps a warm engine (spark runner): small plans "
                          "run on one long-running Spark application instead of a spark-submit each")

    # The planner (`tms planner`): see tms/planning/ and docs/operating/planner.md.
    planner_services: Annotated[list[PlannerService], NoDecode] = Field(
        ["compaction", "clean", "rollback", "archive"],
        description="Comma-separated table services the planner schedules on its own; clustering is opt-in, "
                    "as in Hudi: a table's policy or template turns it on (hoodie.clustering.async.enabled=true) "
                    "or off (=false) for that table (`tms schedule` plans any of them on request)")
    planner_threads: int = Field(4, ge=1, description="Tables one planner process plans at the same time")
    planner_poll_seconds: float = Field(0.5, gt=0, description="How often an idle planner looks for new events")
    planner_tick_seconds: float = Field(
        60.0, gt=0, description="Periodic trigger: time-based compaction triggers, expired writer heartbeats, "
                                "held compaction plans")
    planner_scan_seconds: float = Field(
        600.0, gt=0, description="Reconciliation scan of every enabled table's timeline, which catches what "
                                 "events missed (lost callbacks, writers that send none)")
    discovery_scan_seconds: float = Field(
        0.0, ge=0, description="How often the manager's leader scans every storage root for new, refused and gone "
                               "Hudi tables and onboards them (POST /api/v1/discovery/scan does it on request); "
                               "0: only on request")
    discovery_admit_callbacks: bool = Field(
        False, description="A commit callback from an unregistered table under TMS_STORAGE_ROOTS registers it "
                           "(as discovery does: refused with the reason when TMS cannot serve it) instead of "
                           "being refused; only for senders with the service-wide callback key")
    glue_endpoint_url: str | None = Field(
        None, description="The AWS Glue API the catalog sync (POST /api/v1/discovery/glue-sync) calls; unset: AWS's "
                          "own for TMS_GLUE_REGION (credentials as the AWS SDK finds them)")
    glue_region: str = Field("us-east-1", description="The AWS region of the Glue Data Catalog")
    glue_sync_databases: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Comma-separated Glue databases the manager's leader syncs every "
                                          "TMS_GLUE_SYNC_SECONDS, as POST /api/v1/discovery/glue-sync does")
    glue_sync_seconds: float = Field(
        3600.0, gt=0, description="How often the manager's leader syncs TMS_GLUE_SYNC_DATABASES")
    hive_metastore_uri: str | None = Field(
        None, pattern=r"^thrift://[^/:\s,]+:[0-9]+/?(\s*,\s*thrift://[^/:\s,]+:[0-9]+/?)*$",
        description="The Hive Metastore (thrift://host:port) the catalog sync (POST /api/v1/discovery/hive-sync) "
                    "reads; several, comma-separated, for a highly available metastore (as hive.metastore.uris: "
                    "tried in order, the first that answers is read); unset: no Hive sync")
    hive_sync_databases: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Comma-separated Hive Metastore databases the manager's leader syncs "
                                          "every TMS_HIVE_SYNC_SECONDS, as POST /api/v1/discovery/hive-sync does")
    hive_sync_seconds: float = Field(
        3600.0, gt=0, description="How often the manager's leader syncs TMS_HIVE_SYNC_DATABASES")
    discovery_max_depth: int = Field(
        4, ge=0, le=16, description="Folder levels below a storage root that discovery looks into for tables")
    planner_clean_commits: int = Field(
        5, ge=1, description="Completed writes since a table's last clean (or clean attempt) before the planner "
                             "attempts the next one")
    planner_full_pass_hours: float = Field(
        24.0, ge=0, description="How often a compaction or clustering plan of a v8+ table looks at every partition; "
                                "between these full passes a plan looks only at the partitions written since the "
                                "last plan of its service and those it left out (0: every plan is a full pass)")
    planner_cached_tables: int = Field(
        10_000, ge=1, description="Tables whose loaded timeline a planner process keeps between passes")
    planner_cache_mb: int = Field(
        1024, ge=1, description="Memory (MB, estimated) the loaded timelines a planner keeps may hold; beyond it, "
                                "or beyond TMS_PLANNER_CACHED_TABLES, the least recently planned are dropped")
    planner_watch_timelines: bool = Field(
        True, description="Have the kernel (Linux inotify) feed the planner the changes of cached timelines on "
                          "local filesystems, so a planning pass does not list the timeline folder; network "
                          "filesystems and object stores are always listed")

    # Retries of failed attempts (decided by the worker that saw the failure, made by the manager's leader).
    retry_backoff_seconds: float = Field(
        60.0, ge=0, description="Wait before the first retry of a retryable failure; doubled per attempt, "
                                "with +-20% jitter")
    retry_backoff_max_seconds: float = Field(3600.0, ge=0, description="Longest wait between two attempts")
    retry_max_attempts: int = Field(3, ge=1, description="Attempts of a task before it is FAILED for good "
                                                         "(a `task_failed` alert); an operator's rerun starts anew")

    # The manager (`tms manager`): see manager/ and docs/operating/manager.md.
    manager_lease_seconds: float = Field(
        30.0, gt=0, description="The leader lease; a standby takes over when it expires (database clock)")
    manager_heartbeat_seconds: float = Field(
        10.0, gt=0, description="How often a manager beats and the leader renews its lease")
    manager_reconcile_seconds: float = Field(
        60.0, gt=0, description="How often the leader reconciles tasks with the timelines (and at start); "
                                "TMS_MANAGER_RESTORE_SECONDS, its former name, is still read (deprecated)",
        # the former name ("restore" is Hudi's restore action and the backups' restore) is read too: deprecated
        validation_alias=AliasChoices("manager_reconcile_seconds", "TMS_MANAGER_RECONCILE_SECONDS",
                                      "manager_restore_seconds", "TMS_MANAGER_RESTORE_SECONDS"))
    manager_retry_seconds: float = Field(5.0, gt=0, description="How often the leader looks for due retries")
    manager_monitor_seconds: float = Field(30.0, gt=0, description="How often the leader evaluates alert rules")
    manager_backup_seconds: float = Field(
        60.0, gt=0, description="How often the leader requests the backups (and backup-cleans) tables' backup "
                                "schedules ask for")
    manager_ttl_seconds: float = Field(
        300.0, gt=0, description="How often the leader requests the TTL tasks (record TTL, partition TTL) tables' "
                                 "policies ask for (each once per tms.ttl.interval.hours)")
    manager_health_seconds: float = Field(
        300.0, gt=0, description="How often the leader scores the health of the tables checked longest ago "
                                 "(TMS_HEALTH_BATCH of them), for the fleet view and the metrics")
    health_batch: int = Field(
        50, ge=1, description="Tables whose health the leader scores each time (each read from storage)")
    health_history_days: float = Field(
        14.0, gt=0, description="How long each score is kept as a sample for the trend charts of backlog (each "
                                "table's newest is kept whatever its age); removed by the retention (below)")
    orphan_safety_hours: float = Field(
        24.0, gt=0, description="How old a file no instant references must be before it counts as an orphan "
                                "(younger, it may belong to a write still under way)")
    manager_retention_seconds: float = Field(
        900.0, gt=0, description="How often the leader removes TMS's own history older than its retention "
                                 "(TMS_RETENTION_DAYS and the settings after it)")
    retention_days: float = Field(
        30.0, gt=0, description="How long TMS keeps its own history: ended tasks (succeeded; cancelled or failed "
                                "for good if they name a request, as backups and TTL do), their attempts, resolved "
                                "alerts, delivered or expired webhook deliveries, shadow runs; what is live or "
                                "referenced is kept whatever its age (docs/operating/manager.md)")
    retention_events_days: float = Field(
        7.0, gt=0, description="How long the writers' events are kept once the planner has processed them (the "
                               "biggest table: one row per instant state change); unprocessed ones are kept")
    retention_batch_rows: int = Field(
        1000, ge=1, description="Rows one transaction of the retention removes at most (short transactions, "
                                "short row locks)")
    retention_pause_seconds: float = Field(
        0.05, ge=0, description="Pause between two transactions of the retention, so it never hogs the database")
    manager_metrics_port: int | None = Field(
        None, ge=0, le=65535, description="Port of the manager's Prometheus /metrics (unset: none)")
    monitor_unclaimed_seconds: float = Field(
        900.0, gt=0, description="A runnable task unclaimed this long fires `not_scheduled`")
    monitor_unplanned_seconds: float = Field(
        1800.0, gt=0, description="A table whose compaction trigger has held this long with no compaction "
                                  "planned fires `not_scheduled`")
    monitor_hold_seconds: float = Field(
        6 * 3600.0, gt=0, description="A compensation hold (BLOCKED task) older than this fires `held_too_long`")
    monitor_instance_missing_seconds: float = Field(
        60.0, gt=0, description="A process without a heartbeat this long fires `instance_down`")
    # Engines and rollouts: see worker/engine_choice.py, manager/canary.py and docs/operating/engines.md.
    engine_code_dir: Path | None = Field(
        None, description="Where an engine's `code_version` is looked up when no `code_path` is given: "
                          "<dir>/<version> (a folder holding the `jobs` package) or <dir>/<version>.zip")
    manager_canary_seconds: float = Field(
        30.0, gt=0, description="How often the leader compares each canary's failure rate with its stable engine's")
    canary_failure_margin: float = Field(
        0.2, ge=0, le=1, description="A rollout's default margin: its canary is rolled back when its failure rate "
                                     "exceeds the stable engine's by more than this")
    canary_min_tasks: int = Field(
        5, ge=1, description="A rollout's default: finished canary tasks before its failure rate is judged")
    webhook_poll_seconds: float = Field(2.0, gt=0, description="How often the leader sends due webhook deliveries")
    webhook_timeout_seconds: float = Field(10.0, gt=0, description="Timeout of one webhook request")
    webhook_backoff_seconds: float = Field(
        10.0, ge=0, description="Wait before retrying a failed delivery; doubled per attempt up to 10 minutes")
    webhook_max_age_seconds: float = Field(
        86400.0, gt=0, description="A delivery not accepted within this long is given up (expired)")

    # The roles' views: built once per instance from the flat fields above; a copy or a changed field
    # (model_copy(update=...), a test's monkeypatch) builds them anew.
    @cached_property
    def service(self) -> ServiceSettings:
        return ServiceSettings.of(self)

    @cached_property
    def worker(self) -> WorkerSettings:
        return WorkerSettings.of(self)

    @cached_property
    def planner(self) -> PlannerSettings:
        return PlannerSettings.of(self)

    @cached_property
    def manager(self) -> ManagerSettings:
        return ManagerSettings.of(self)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ROLE_VIEWS:
            raise AttributeError(f"settings.{name} is derived from the flat settings: set those")
        super().__setattr__(name, value)
        self._forget_views()

    def __copy__(self) -> Self:
        copied = super().__copy__()
        copied._forget_views()
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        copied = super().__deepcopy__(memo)
        copied._forget_views()
        return copied

    def _forget_views(self) -> None:
        for name in ROLE_VIEWS:
            self.__dict__.pop(name, None)

    @field_validator("storage_roots", "backup_roots", "planner_services", "glue_sync_databases",
                     "hive_sync_databases", mode="before")
    @classmethod
    def _split_commas(cls, value):
        if isinstance(value, str):
            return [root.strip() for root in value.split(",") if root.strip()]
        return value

    @field_validator("timeline_local_timezone")
    @classmethod
    def _known_zone(cls, value):
        try:
            zone_named(value) if value else local_zone()  # unset: this host's zone, which must be one too
        except HudiError as e:
            raise ValueError(str(e)) from None
        return value or None

    @field_validator("display_timezone")
    @classmethod
    def _display_zone(cls, value):
        try:
            return check_zone(value)
        except ConfigError as e:
            raise ValueError(str(e)) from None

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value):
        return value.upper() if isinstance(value, str) else value

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings],
                                   init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource):
        sources = [init_settings, env_settings]
        config_file = os.environ.get(CONFIG_FILE_ENV)
        if config_file:
            sources.append(_file_source(settings_cls, Path(config_file)))
        return tuple(sources)


def _file_source(settings_cls: type[BaseSettings], path: Path) -> PydanticBaseSettingsSource:
    if not path.is_file():
        raise ConfigError(f"{CONFIG_FILE_ENV}={path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".toml":
        return TomlConfigSettingsSource(settings_cls, toml_file=path)
    if suffix in (".yaml", ".yml"):
        return YamlConfigSettingsSource(settings_cls, yaml_file=path)
    raise ConfigError(f"{CONFIG_FILE_ENV}={path}: expected a .toml, .yaml or .yml file")


def load_settings(**overrides) -> Settings:
    """Settings from the environment and config file; keyword arguments take precedence. ConfigError (one
    line naming the setting) for a value that cannot be used."""
    try:
        settings = Settings(**overrides)
    except ValidationError as e:
        error = e.errors()[0]
        name = "TMS_" + "_".join(str(p) for p in error["loc"]).upper() if error["loc"] else "settings"
        raise ConfigError(f"{name}: {error['msg']}") from None
    check_roots(settings.storage_root_options, settings.storage_roots)
    return settings
