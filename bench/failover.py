"""Manager failover and webhook latency, with real `tms manager` processes on a scratch database:

  (a) time from SIGKILL of the leader to the new leader's first periodic run (the lease row's last_work_at
      after its acquired_at), over --rounds rounds; p50 and max against the goal lease + one heartbeat;
  (b) webhook delivery latency from an alert's creation to its arrival at a receiver on loopback (p50, p99),
      alerts raised as the planner raises them (in the database, outbox in the same transaction).

    .venv/bin/python bench/failover.py                         # 20 rounds, lease 4 s, heartbeat 1 s
    .venv/bin/python bench/failover.py --lease 2 --heartbeat 0.5 --alerts 200
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from sqlalchemy import text

from tms.db import AlertRepo, Database, WebhookRepo
from tms.db.testing import scratch_database

REPO = Path(__file__).resolve().parents[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class Managers:
    def __init__(self, database: Database, log_dir: Path, lease: float, heartbeat: float):
        self.database = database
        self.log_dir = log_dir
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("TMS_")},
                    "TMS_DATABASE_URL": database.url, "TMS_MANAGER_LEASE_SECONDS": str(lease),
                    "TMS_MANAGER_HEARTBEAT_SECONDS": str(heartbeat), "TMS_WEBHOOK_POLL_SECONDS": "0.1",
                    "TMS_MANAGER_RECONCILE_SECONDS": "5", "TMS_MANAGER_MONITOR_SECONDS": "5"}
        self.procs: dict[int, subprocess.Popen] = {}

    def start(self) -> None:
        log = open(self.log_dir / f"manager-{len(self.procs)}.log", "wb")
        proc = subprocess.Popen([sys.executable, "-m", "tms.cli", "manager"], cwd=REPO, env=self.env, stdout=log,
                                stderr=subprocess.STDOUT)
        self.procs[proc.pid] = proc

    def wait_for_standbys(self, count: int, timeout: float = 120) -> None:
        """Until `count` managers beat (so the next kill measures a takeover, not a process start)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = {pid for pid, proc in self.procs.items() if proc.poll() is None}
            if len(running) < count:  # one could not start (a shared machine: no database connection left)
                self.start()
                continue
            with self.database.transaction() as session:
                ids = session.execute(text("SELECT id FROM instances WHERE 'manager' = ANY(roles)")).scalars()
                beating = {int(i.split(":")[1]) for i in ids} & running
            if len(beating) >= count:
                return
            time.sleep(0.05)
        raise RuntimeError(f"fewer than {count} managers beat")

    def working_leader(self, other_than: str | None, timeout: float = 120) -> tuple[str, int]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.database.transaction() as session:
                row = session.execute(text("SELECT holder, expires_at > now(), last_work_at >= acquired_at "
                                           "FROM leases WHERE name = 'manager'")).first()
            if row and row[0] and row[1] and row[2] and row[0] != other_than:
                return row[0], int(row[0].split(":")[1])
            time.sleep(0.01)
        raise RuntimeError("no leader")

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            proc.wait(timeout=30)


def failover_rounds(managers: Managers, rounds: int) -> list[float]:
    managers.start()
    managers.start()
    holder, pid = managers.working_leader(None)
    took = []
    for n in range(rounds):
        managers.wait_for_standbys(2)  # the leader and a standby
        killed = time.monotonic()
        managers.procs[pid].send_signal(signal.SIGKILL)
        holder, pid = managers.working_leader(holder)
        took.append(time.monotonic() - killed)
        print(f"  round {n + 1}: {took[-1]:.2f} s", flush=True)
        managers.start()  # the next standby
    return took


def webhook_latency(database: Database, alerts: int) -> list[float]:
    arrived: dict[str, float] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            arrived[self.headers["X-TMS-Delivery"]] = time.time()
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with database.transaction() as session:
        WebhookRepo(session).create(url=f"http://127.0.0.1:{server.server_address[1]}/", secret="bench-secret",
                                    kinds=[], min_severity="info", format="json")
    raised: dict[str, float] = {}
    for n in range(alerts):
        with database.transaction() as session:
            alert, _ = AlertRepo(session).raise_alert(kind="planning_failed", severity="warning", message="bench",
                                                      fingerprint=f"bench:{n}", subject=f"table:{n}")
            delivery = session.execute(text("SELECT id FROM webhook_deliveries WHERE alert_id = :a"),
                                       {"a": alert.id}).scalar()
        raised[str(delivery)] = time.time()
        time.sleep(0.02)
    deadline = time.monotonic() + 120
    while len(arrived) < alerts and time.monotonic() < deadline:
        time.sleep(0.1)
    server.shutdown()
    return [arrived[d] - raised[d] for d in raised if d in arrived]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--lease", type=float, default=4.0)
    ap.add_argument("--heartbeat", type=float, default=1.0)
    ap.add_argument("--alerts", type=int, default=100)
    ap.add_argument("--webhooks-only", action="store_true", help="measure the webhook latency only")
    args = ap.parse_args()
    with scratch_database() as url, tempfile.TemporaryDirectory() as logs:
        database = Database(url)
        managers = Managers(database, Path(logs), args.lease, args.heartbeat)
        try:
            print(f"lease {args.lease} s, heartbeat {args.heartbeat} s "
                  f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.1f})", flush=True)
            if args.webhooks_only:
                managers.start()
                managers.working_leader(None)
            else:
                took = failover_rounds(managers, args.rounds)
                goal = args.lease + args.heartbeat
                print(f"SIGKILL -> new leader's first periodic run: p50 {statistics.median(took):.2f} s, "
                      f"max {max(took):.2f} s (goal <= {goal:.1f} s: {'met' if max(took) <= goal else 'NOT met'})")
            latency = webhook_latency(database, args.alerts)
            print(f"webhook delivery, alert -> receiver ({len(latency)}/{args.alerts} delivered): "
                  f"p50 {1000 * statistics.median(latency):.0f} ms, p99 {1000 * percentile(latency, 0.99):.0f} ms")
        finally:
            managers.stop()
            database.dispose()


if __name__ == "__main__":
    main()
