"""The demo writer: a partitioned trips table that keeps receiving inserts, updates and deletes."""
from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable

import pyarrow as pa

from tms.hudi.errors import TableNotFoundError
from tms.hudi.reader import read_snapshot
from tms.hudi.table import HudiTable
from tms.hudi.writer import HudiWriter

CITIES = ("san_francisco", "sao_paulo", "chennai")
TRIPS_SCHEMA = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("rider", pa.string()),
                          ("driver", pa.string()), ("fare", pa.float64()), ("city", pa.string())])


def ensure_demo_table(path: str, *, table_type: str = "MERGE_ON_READ", version: int = 8) -> HudiTable:
    """The demo table at `path`, created (with no commits yet) if there is none."""
    try:
        return HudiTable.load(path)
    except TableNotFoundError:
        return HudiWriter.create_table(path, table_type=table_type, version=version, key=["uuid"],
                                       ordering=["ts"], partition=["city"], schema=TRIPS_SCHEMA,
                                       name="trips").table


def _trip(rng: random.Random, key: str, ts: int, city: str | None = None) -> dict:
    return {"uuid": key, "ts": ts, "rider": f"rider-{rng.randint(1, 99)}", "driver": f"driver-{rng.randint(1, 99)}",
            "fare": round(rng.uniform(5, 90), 2), "city": city or rng.choice(CITIES)}


def run_demo_writer(path: str, *, commits: int = 0, interval: float = 5.0, table_type: str = "MERGE_ON_READ",
                    version: int = 8, callback_url: str | None = None, callback_key: str | None = None,
                    batch: int = 200, seed: int | None = None, echo: Callable[[str], None] = print,
                    stop: threading.Event | None = None) -> None:
    """Write `commits` commits (0: until interrupted, or until `stop` is set), `interval` seconds apart:
    inserts while the table is small, then mostly updates with some inserts, and now and then deletes."""
    rng = random.Random(seed)
    table = ensure_demo_table(path, table_type=table_type, version=version)
    writer = HudiWriter(table, callback_url=callback_url, callback_key=callback_key)
    live = {r["uuid"]: r["city"] for r in read_snapshot(table, columns=["uuid", "city"]).to_pylist()} \
        if table.timeline.completed_writes() else {}
    n = 0
    stop = stop or threading.Event()
    while (commits == 0 or n < commits) and not stop.is_set():
        if n and stop.wait(interval):
            break
        now = int(time.time() * 1000)
        keys = list(live)
        if len(keys) < batch:
            rows = [_trip(rng, str(uuid.uuid4()), now) for _ in range(batch)]
            op, what = "insert", f"{len(rows)} inserts"
        elif rng.random() < 0.15:
            rows = [{"uuid": k, "city": live[k]} for k in rng.sample(keys, max(1, batch // 20))]
            op, what = "delete", f"{len(rows)} deletes"
        else:
            updates = [_trip(rng, k, now, live[k]) for k in rng.sample(keys, batch // 2)]
            inserts = [_trip(rng, str(uuid.uuid4()), now) for _ in range(batch // 4)]
            rows, op, what = updates + inserts, "upsert", f"{len(updates)} updates, {len(inserts)} inserts"
        result = writer.write(rows, op)
        for r in rows:
            if op == "delete":
                live.pop(r["uuid"], None)
            else:
                live[r["uuid"]] = r["city"]
        echo(f"{result.action} {result.instant}: {what}")
        n += 1
