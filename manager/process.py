"""The manager process (`tms manager`): it beats, and takes or renews the leader lease every heartbeat (then
resolves `no_leader` once a manager leads, tms.leadership.watch). The leader runs the periodic work on
APScheduler; a standby only waits for the lease. Any number of managers may
run: the lease and the fenced transactions (leadership.py) make one leader's writes count at a time.

The leader's periodic work: reconciliation with the timelines (at start and every `manager_reconcile_seconds`),
due retries, the backups' and the TTL tasks' schedules, the alert rules, webhook deliveries, the planners'
periodic trigger and reconciliation scan (it asks, planners plan), and the retention of TMS's own history."""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from apscheduler.schedulers.background import BackgroundScheduler

from tms.config import Settings
from tms.db import Database
from tms.errors import TMSError
from tms.fleet.glue import sync_glue_database
from tms.fleet.health import score_stalest
from tms.fleet.hive import sync_hive_database
from tms.fleet.onboarding import ScanReport, scan_root
from tms.instance import RoleLoop
from tms.leadership import LeaderLease, LeaderWatch, NotLeader
from tms.table_context import table_context
from tms.webhooks.delivery import Deliverer

from .backups import schedule_backups
from .canary import check_canaries
from .metrics import removed_rows_counter
from .monitor import MonitorContext, evaluate
from .planning_requests import request_scans, request_ticks
from .reconcile import reconcile
from .retention import purge_history
from .retries import promote_due_retries
from .ttl import schedule_ttl

log = logging.getLogger(__name__)
ROLE = "manager"
VACANT_GRACE_SECONDS = 0.02


class ManagerService:
    def __init__(self, database: Database, settings: Settings, *, instance_id: str | None = None):
        self.database = database
        self.settings = settings
        own = settings.manager
        # The manager's heartbeat is also its bid for the lease: a turn that carries one bids first.
        self.loop = RoleLoop(database, [ROLE], heartbeat_seconds=own.heartbeat_seconds, instance_id=instance_id)
        self.id = self.loop.id
        self.lease = LeaderLease(database, self.id, lease_seconds=own.lease_seconds,
                                 heartbeat_seconds=own.heartbeat_seconds)
        self.deliverer = Deliverer(settings.manager)
        self.leader_watch = LeaderWatch(database, settings)
        self.monitor = MonitorContext(settings, datetime.now(UTC), {})
        self.retention_removed = removed_rows_counter()  # shown by the manager's /metrics
        self._scheduler: BackgroundScheduler | None = None
        self._leading: int | None = None  # the epoch the periodic work runs at

    @property
    def leading_epoch(self) -> int | None:
        return self._leading

    # --- lifecycle ----------------------------------------------------------------------------------
    def run(self) -> None:
        log.info("manager %s: lease %ss, heartbeat %ss", self.id, self.settings.manager.lease_seconds,
                 self.settings.manager.heartbeat_seconds)
        self.loop.run(self, finish=self._finish)

    def stop(self) -> None:
        self.loop.stop()

    def turn(self) -> float | None:
        """Bid for the lease when a heartbeat is due, and run the periodic work exactly while leading."""
        if self.loop.beating:
            self._bid()
        self._follow(self.lease.epoch)
        if self._leading is not None:  # wake when the local lease runs out, to stop in time
            return max(0.01, self.lease.valid_for())
        if (vacant := self.lease.vacant_in()) is not None:
            # A standby: try again the moment the leader's lease ends (a few ms later, on the database's
            # clock), in case the leader is gone.
            self.loop.beat_within(max(0.01, vacant + VACANT_GRACE_SECONDS))
        return None  # until the next heartbeat

    def facts(self) -> dict[str, object]:
        return {"leader": self.lease.epoch is not None, "epoch": self.lease.epoch}

    def _finish(self) -> None:
        self._follow(None, finish_work=True)  # still the leader: let the running jobs record their work
        try:
            self.lease.release()
        except Exception as exc:  # it then simply expires
            log.warning("manager %s: could not release the lease: %s", self.id, exc)
        self.deliverer.close()

    # --- election -----------------------------------------------------------------------------------
    def _bid(self) -> None:
        try:
            self.lease.try_acquire()
        except Exception as exc:  # a database outage: the local lease runs out and the work stops
            log.warning("manager %s: cannot reach the lease: %s", self.id, exc)
        try:  # resolves `no_leader` once this manager leads (a live manager takes a vacant lease itself)
            self.leader_watch.check()
        except Exception as exc:
            log.warning("manager %s: cannot check for a leader: %s", self.id, exc)

    def _follow(self, epoch: int | None, *, finish_work: bool = False) -> None:
        """Run the periodic work exactly while this manager leads, at the epoch it leads at."""
        if epoch == self._leading:
            return
        if self._leading is not None:
            if self.loop.stopping:  # a normal stop: nothing went wrong
                log.info("manager %s: stopping; periodic work of epoch %s stopped", self.id, self._leading)
            else:
                log.warning("manager %s: no longer the leader (epoch %s); periodic work stopped", self.id,
                            self._leading)
            assert self._scheduler is not None
            self._scheduler.shutdown(wait=finish_work)
            self._scheduler = None
        self._leading = epoch
        if epoch is not None:
            log.info("manager %s: leader at epoch %s", self.id, epoch)
            self._scheduler = self._schedule(epoch)

    def _schedule(self, epoch: int) -> BackgroundScheduler:
        s, own = self.settings, self.settings.manager
        scheduler = BackgroundScheduler(timezone=UTC)
        now = datetime.now(UTC)
        jobs: list[tuple[str, float, Callable[[int], object]]] = [
            ("reconcile", own.reconcile_seconds, lambda e: reconcile(self.lease, e, table_context(s))),
            ("retries", own.retry_seconds, lambda e: promote_due_retries(self.lease, e)),
            ("canaries", own.canary_seconds, lambda e: check_canaries(self.lease, e)),
            ("backups", own.backup_seconds, lambda e: schedule_backups(self.lease, e)),
            ("ttl", own.ttl_seconds, lambda e: schedule_ttl(self.lease, e)),
            ("monitor", own.monitor_seconds, lambda e: evaluate(self.lease, e, self.monitor)),
            ("webhooks", own.webhook_poll_seconds, lambda e: self.deliverer.run_once(lambda: self.lease.fenced(e))),
            ("planner tick", s.planner.tick_seconds, lambda e: request_ticks(self.lease, e)),
            ("planner scan", s.planner.scan_seconds, lambda e: request_scans(self.lease, e)),
        ]
        jobs.append(("health", own.health_seconds, lambda e: self._score_health()))
        jobs.append(("retention", own.retention_seconds, lambda e: purge_history(
            self.lease, e, s, removed=self.retention_removed,
            stopping=lambda: self.loop.stopping or self.lease.epoch != e)))
        if own.discovery_scan_seconds > 0:
            jobs.append(("discovery", own.discovery_scan_seconds, lambda e: self._discover()))
        if own.glue_sync_databases:
            jobs.append(("glue sync", own.glue_sync_seconds, lambda e: self._sync_glue()))
        if own.hive_sync_databases:
            jobs.append(("hive sync", own.hive_sync_seconds, lambda e: self._sync_hive()))
        for name, seconds, work in jobs:
            scheduler.add_job(self._leader_job(name, epoch, work), "interval", seconds=seconds, max_instances=1,
                              coalesce=True, next_run_time=now, id=name)
        scheduler.start()
        return scheduler

    def _discover(self) -> None:
        """Onboard what the storage roots hold now (tms.fleet): idempotent, so a scan that overlaps a
        takeover does no harm."""
        for root in self.settings.storage_roots:
            report = scan_root(self.database, root, max_depth=self.settings.manager.discovery_max_depth,
                               context=table_context(self.settings))
            if report.registered or report.missing:
                log.info("discovery of %s: %s registered, %s refused, %s gone (disabled)", root,
                         len(report.registered), len(report.refused), len(report.missing))

    def _sync_glue(self) -> None:
        """Onboard the Hudi tables of each configured Glue database (tms.fleet.glue)."""
        s, own = self.settings, self.settings.manager
        self._sync_catalog("glue", own.glue_sync_databases, lambda name: sync_glue_database(
            self.database, name, endpoint_url=own.glue_endpoint_url, region=own.glue_region,
            storage_roots=s.storage_roots, context=table_context(s)))

    def _sync_hive(self) -> None:
        """Onboard the Hudi tables of each configured Hive Metastore database (tms.fleet.hive)."""
        s, own = self.settings, self.settings.manager
        self._sync_catalog("hive", own.hive_sync_databases, lambda name: sync_hive_database(
            self.database, name, metastore_uri=own.hive_metastore_uri, storage_roots=s.storage_roots,
            context=table_context(s)))

    @staticmethod
    def _sync_catalog(catalog: str, databases: Sequence[str], sync: Callable[[str], ScanReport]) -> None:
        """Sync each catalog database; one that cannot be read is logged and the others go on."""
        for name in databases:
            try:
                report = sync(name)
            except TMSError as exc:
                log.warning("%s sync of %s failed: %s", catalog, name, exc)
                continue
            if report.registered or report.missing:
                log.info("%s sync of %s: %s registered, %s refused, %s dropped (disabled)", catalog, name,
                         len(report.registered), len(report.refused), len(report.missing))

    def _score_health(self) -> None:
        """Score the tables checked longest ago (tms.fleet.health), for the fleet view and the metrics."""
        s = self.settings
        score_stalest(self.database, datetime.now(UTC), batch=s.manager.health_batch,
                      clean_commits=s.planner.clean_commits,
                      orphan_safety_seconds=s.orphan_safety_hours * 3600, context=table_context(s))

    def _leader_job(self, name: str, epoch: int, work: Callable[[int], object]) -> Callable[[], None]:
        def run() -> None:
            if self.lease.epoch != epoch:
                return
            try:
                work(epoch)
            except NotLeader as exc:
                log.warning("manager %s: %s skipped: %s", self.id, name, exc)
            except Exception:
                log.exception("manager %s: %s failed", self.id, name)
        return run
