"""The demo writer: a partitioned trips table that keeps receiving inserts, updates and deletes.

It writes as a well-behaved Hudi writer of a table TMS clusters (its policy asks for clustering, see
standalone/run.py DEMO_POLICIES): new trips go into the city's small file
groups (so the table does not gain a file group per commit), and updates and deletes leave alone the trips
whose file group is being clustered (Hudi's default update strategy would refuse them: the writer picks
others instead of failing)."""
from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable

import pyarrow as pa

from tms.hudi.errors import TableNotFoundError, UpdateRejectedError
from tms.hudi.records.merge import KEY, merge_slice
from tms.hudi.records.reader import read_snapshot
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.small_files import FileSizing
from tms.hudi.table.writer import HudiWriter

CITIES = ("san_francisco", "sao_paulo", "chennai")
# New trips go into the city's small file group, as Hudi's writers route inserts (its default limits), so
# the table keeps one file group per city instead of gaining one with every commit.
DEMO_FILE_SIZING = FileSizing(small_file_limit=100 * 1024 * 1024)
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


def _keys_being_clustered(table: HudiTable) -> set[str]:
    """The record keys in file groups a pending clustering holds."""
    table.timeline.reload()
    view = table.file_system_view()
    busy = set(view.pending_clustering)
    keys: set[str] = set()
    for fs in view.merged_latest_slices():
        if (fs.partition, fs.file_id) in busy:
            keys.update(merge_slice(table.storage, table.config, fs, view.is_completed, [KEY]).column(KEY).to_pylist())
    return keys


def run_demo_writer(path: str, *, commits: int = 0, interval: float = 5.0, table_type: str = "MERGE_ON_READ",
                    version: int = 8, callback_url: str | None = None, callback_key: str | None = None,
                    batch: int = 200, seed: int | None = None, echo: Callable[[str], None] = print,
                    stop: threading.Event | None = None) -> None:
    """Write `commits` commits (0: until interrupted, or until `stop` is set), `interval` seconds apart:
    inserts while the table is small, then mostly updates with some inserts, and now and then deletes."""
    rng = random.Random(seed)
    table = ensure_demo_table(path, table_type=table_type, version=version)
    writer = HudiWriter(table, callback_url=callback_url, callback_key=callback_key, file_sizing=DEMO_FILE_SIZING)
    live = {r["uuid"]: r["city"] for r in read_snapshot(table, columns=["uuid", "city"]).to_pylist()} \
        if table.timeline.completed_writes() else {}
    n = 0
    stop = stop or threading.Event()
    while (commits == 0 or n < commits) and not stop.is_set():
        if n and stop.wait(interval):
            break
        now = int(time.time() * 1000)
        clustering = _keys_being_clustered(table)
        keys = [k for k in live if k not in clustering]
        if len(live) < batch:
            rows = [_trip(rng, str(uuid.uuid4()), now) for _ in range(batch)]
            op, what = "insert", f"{len(rows)} inserts"
        elif rng.random() < 0.15:
            rows = [{"uuid": k, "city": live[k]} for k in rng.sample(keys, min(len(keys), max(1, batch // 20)))]
            op, what = "delete", f"{len(rows)} deletes"
        else:
            updates = [_trip(rng, k, now, live[k]) for k in rng.sample(keys, min(len(keys), batch // 2))]
            inserts = [_trip(rng, str(uuid.uuid4()), now) for _ in range(batch // 4)]
            rows, op, what = updates + inserts, "upsert", f"{len(updates)} updates, {len(inserts)} inserts"
        try:
            result = writer.write(rows, op)
        except UpdateRejectedError as e:  # a clustering was planned since the keys were picked: TMS rolls it back
            echo(f"{op} refused ({e}); the next commit picks other trips")
            n += 1
            continue
        for r in rows:
            if op == "delete":
                live.pop(r["uuid"], None)
            else:
                live[r["uuid"]] = r["city"]
        echo(f"{result.action} {result.instant}: {what}")
        n += 1
