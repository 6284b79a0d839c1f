"""One process of the multi-process soak (run as a script), sharing a table and its lock with the others:

    soak_party.py writer  --table T --options JSON --writer W --writers N --keys K --seconds S --ack F --order F
        [--allow-updates]   upserts and deletes of the keys it owns (i % N == W), each acknowledged write
                            appended to F (--ack) once it committed
    soak_party.py planner --table T --options JSON --seconds S --order F   plan rollback, compaction, clustering,
                                                                          clean, again and again
    soak_party.py worker  --table T --options JSON --seconds S --order F   run every pending plan

Each party runs for --seconds S, then on until it made its least progress (a writer two acknowledged writes, the
planner a compaction, the worker one completed plan), never past --max-seconds (180).

Every party records, while it still holds the table's lock, the instant and completion times its transaction
created (--order: appended under the lock, so the file's order is the lock order). Errors that are part of
the game (a write that lost a conflict, an update rejected because its file group is being clustered, a plan
held by a write in flight, a clustering that gave way) are counted; anything else is reported on stderr and
fails the party (exit status 1)."""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import traceback
from contextlib import contextmanager
from datetime import UTC, datetime

from tms.execute.dispatch import execute_instant
from tms.execute.errors import PlanHeldError
from tms.execute.runner import LocalRunner
from tms.hudi.errors import HudiError
from tms.hudi.locks import TransactionManager, parse_concurrency_options
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.writer import HudiWriter
from tms.hudi.timeline.conflicts import WriteConflictError
from tms.hudi.timeline.instant import Action, State
from tms.planning.policy import TablePolicy
from tms.planning.schedule import schedule

CITIES = ["sf", "nyc", "sp"]
PLANNER_POLICY = {"hoodie.compact.inline.max.delta.commits": 2, "hoodie.clustering.async.max.commits": 3,
                  "hoodie.cleaner.commits.retained": 10, "hoodie.client.heartbeat.interval_in_ms": 3000,
                  "hoodie.client.heartbeat.tolerable.misses": 2}


def record(i: int, ts: int, name: str) -> dict:
    # Keys of different writers share partitions (and file groups): writers conflict with each other.
    return {"id": i, "name": name, "ts": ts, "city": CITIES[(i // 3) % 3]}


def append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


class RecordingTransactions(TransactionManager):
    """Appends, before releasing the lock, every instant time and completion time its transaction created."""

    def __init__(self, table, config, order_file: str, party: str):
        super().__init__(table, config)
        self.order_file = order_file
        self.party = party
        self._outer = 0

    @contextmanager
    def transaction(self):
        with super().transaction() as timeline:
            self._outer += 1
            before = set(timeline.all_files()) if self._outer == 1 else None
            try:
                yield timeline
            finally:
                self._outer -= 1
                if before is not None:
                    timeline.reload(force=True)
                    times = set()
                    for inst in timeline.all_files():
                        if inst in before:
                            continue
                        if inst.is_requested:
                            times.add(inst.timestamp)
                        if inst.is_completed and inst.completion_time:
                            times.add(inst.completion_time)
                    if times:
                        append(self.order_file, json.dumps({"party": self.party, "times": sorted(times)}))


def open_party(args, party: str) -> tuple[HudiTable, RecordingTransactions]:
    table = HudiTable.load(args.table)
    config = parse_concurrency_options(json.loads(args.options), base_path=args.table, table_name=table.name)
    return table, RecordingTransactions(table, config, args.order, party)


def running(started: float, args, progressed: bool) -> bool:
    """Whether a party goes on: for `--seconds`, then until it made its least progress (a loaded machine's slow
    start must not fail the soak), but never past `--max-seconds`."""
    elapsed = time.monotonic() - started
    return elapsed < args.seconds or (not progressed and elapsed < args.max_seconds)


def run_writer(args) -> int:
    table, transactions = open_party(args, f"writer{args.writer}")
    writer = HudiWriter(table, transactions=transactions, allow_updates_to_clustering=args.allow_updates)
    rng = random.Random(args.writer * 7919 + os.getpid())
    owned = [i for i in range(args.keys) if i % args.writers == args.writer]
    live = set(owned)  # the initial load wrote every key
    counts = {"acked": 0, "conflicts": 0, "rejected": 0, "rolled_back": 0}
    seq = 0
    started = time.monotonic()
    while running(started, args, counts["acked"] >= 2):
        seq += 1
        ts = 1000 + seq
        if live and rng.random() < 0.25:
            keys = rng.sample(sorted(live), 1)
            op, records = "delete", [{"id": i, "city": record(i, 0, "")["city"]} for i in keys]
        else:
            keys = rng.sample(owned, rng.randint(1, 3))
            op, records = "upsert", [record(i, ts, f"w{args.writer}-{seq}") for i in keys]
        try:
            writer.write(records, op)
        except WriteConflictError:
            counts["conflicts"] += 1
            continue
        except HudiError as e:
            if "is being clustered" in str(e):
                counts["rejected"] += 1
                continue
            if "is being rolled back" in str(e) or "is not inflight" in str(e):
                counts["rolled_back"] += 1  # it waited past its heartbeat's tolerance: presumed failed
                continue
            raise
        append(args.ack, json.dumps({"op": op, "records": records}))
        counts["acked"] += 1
        live = live - set(keys) if op == "delete" else live | set(keys)
    transactions.close()
    print(json.dumps({**counts, "seconds": round(time.monotonic() - started)}), flush=True)
    return 0


def run_planner(args) -> int:
    table, transactions = open_party(args, "planner")
    policy = TablePolicy().merged(PLANNER_POLICY)
    planned = {}
    started = time.monotonic()
    while running(started, args, planned.get("compaction", 0) >= 1):
        for action in ("rollback", "compaction", "clustering", "clean"):
            result = schedule(table, action, policy, datetime.now(UTC), transactions)
            planned[action] = planned.get(action, 0) + len(result.planned)
        time.sleep(0.2)
    transactions.close()
    print(json.dumps(planned), flush=True)
    return 0


def pending_plans(table: HudiTable) -> list[str]:
    tl = table.timeline
    tl.reload()
    plans = [i for i in tl.pending((Action.ROLLBACK, Action.COMPACTION, Action.CLUSTERING, Action.REPLACE_COMMIT,
                                    Action.CLEAN))
             if State.REQUESTED in tl.states_of(i.timestamp)]
    plans.sort(key=lambda i: (i.action != Action.ROLLBACK, i.timestamp))  # rollbacks first: they release held plans
    return [i.timestamp for i in plans]


def run_worker(args) -> int:
    table, transactions = open_party(args, "worker")
    counts = {"completed": 0, "held": 0, "gave_way": 0}
    started = time.monotonic()
    while running(started, args, counts["completed"] >= 1):
        for ts in pending_plans(table):
            try:
                execute_instant(table, ts, LocalRunner(1), transactions=transactions)
                counts["completed"] += 1
            except PlanHeldError:
                counts["held"] += 1
            except WriteConflictError:
                counts["gave_way"] += 1
        time.sleep(0.2)
    transactions.close()
    print(json.dumps(counts), flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["writer", "planner", "worker"])
    ap.add_argument("--table", required=True)
    ap.add_argument("--options", required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--max-seconds", type=float, default=180)
    ap.add_argument("--order", required=True)
    ap.add_argument("--writer", type=int, default=0)
    ap.add_argument("--writers", type=int, default=3)
    ap.add_argument("--keys", type=int, default=30)
    ap.add_argument("--ack")
    ap.add_argument("--allow-updates", action="store_true")
    args = ap.parse_args()
    try:
        return {"writer": run_writer, "planner": run_planner, "worker": run_worker}[args.role](args)
    except Exception:  # noqa: BLE001 - the soak reports every unexpected error
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
