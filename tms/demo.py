"""The demo writer: a partitioned trips table that keeps receiving inserts, updates and deletes."""
from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable

from tms.hudi.errors import TableNotFoundError
from tms.hudi.table import HudiTable
from tms.hudi.writer import HudiWriter, create_table_for_records

CITIES = ("san_francisco", "sao_paulo", "chennai")


def _trip(rng: random.Random, key: str, ts: int) -> dict:
    return {"uuid": key, "ts": ts, "rider": f"rider-{rng.randint(1, 99)}", "driver": f"driver-{rng.randint(1, 99)}",
            "fare": round(rng.uniform(5, 90), 2), "city": rng.choice(CITIES)}


def run_demo_writer(path: str, *, commits: int = 0, interval: float = 5.0, table_type: str = "MERGE_ON_READ",
                    version: int = 8, callback_url: str | None = None, callback_key: str | None = None,
                    batch: int = 200, seed: int | None = None, echo: Callable[[str], None] = print) -> None:
    """Write `commits` commits (0: forever), `interval` seconds apart. The first creates the table."""
    rng = random.Random(seed)
    opts = dict(callback_url=callback_url, callback_key=callback_key)
    live: dict[str, dict] = {}
    try:
        writer = HudiWriter(HudiTable.load(path), **opts)
        from tms.hudi.reader import read_snapshot
        for row in read_snapshot(writer.table, columns=["uuid", "ts", "city"]).to_pylist():
            live[row["uuid"]] = row
    except TableNotFoundError:
        first = [_trip(rng, str(uuid.uuid4()), int(time.time() * 1000)) for _ in range(batch)]
        writer = create_table_for_records(path, first, table_type=table_type, version=version, key=["uuid"],
                                          ordering=["ts"], partition=["city"], **opts)
        result = writer.write(first, "insert")
        live.update({r["uuid"]: r for r in first})
        echo(f"created {path}: {result.action} {result.instant} ({len(first)} inserts)")
        if commits:
            commits -= 1
            if commits == 0:
                return
    n = 0
    while commits == 0 or n < commits:
        time.sleep(interval)
        now = int(time.time() * 1000)
        keys = list(live)
        if keys and rng.random() < 0.15:
            victims = rng.sample(keys, min(len(keys), max(1, batch // 20)))
            rows = [{"uuid": k, "city": live[k]["city"]} for k in victims]
            result = writer.write(rows, "delete")
            for k in victims:
                live.pop(k)
            what = f"{len(rows)} deletes"
        else:
            updates = [dict(_trip(rng, k, now), city=live[k]["city"]) for k in rng.sample(keys, min(len(keys), batch // 2))]
            inserts = [_trip(rng, str(uuid.uuid4()), now) for _ in range(batch // 4)]
            result = writer.write(updates + inserts, "upsert")
            live.update({r["uuid"]: r for r in updates + inserts})
            what = f"{len(updates)} updates, {len(inserts)} inserts"
        echo(f"{result.action} {result.instant}: {what}")
        n += 1
