"""Event-intake benchmark: single-event POSTs and batch POSTs from concurrent clients on loopback
against one service process (uvicorn) with PostgreSQL, beside the same app's no-op endpoint
(`POST /bench/noop`, mounted by this benchmark on its own app instance: same middleware and authentication,
no parsing, no database), in one run.

    python bench/ingest.py [--seconds 3] [--rounds 5] [--concurrency 32] [--batch-size 500]

The clients are asyncio keep-alive HTTP/1.1 connections written directly on sockets, so the client
costs little CPU next to the server on a small machine; the measurements alternate between the
endpoints for `--rounds` rounds and the median round is reported, with the CPU time the service process
and its PostgreSQL backends spent per request (less sensitive than requests/s to the machine's other load,
which is printed too). PostgreSQL: the server of
TMS_DATABASE_URL if set, else the local or a throwaway one (tms.db.testing), in a scratch database
dropped at the end, with synchronous commit as configured there.

Goals (issue 14): single events >= 0.7x the no-op request rate; batches >= 50,000 events/s."""
from __future__ import annotations

import argparse
import asyncio
import importlib.util
import itertools
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import httpx
import psycopg

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fastapi import FastAPI, status  # noqa: E402

from service.app import create_app  # noqa: E402
from service.routers.events import Writer  # noqa: E402
from tms.db import Database, TableRepo  # noqa: E402
from tms.db.engine import libpq_url  # noqa: E402
from tms.db.testing import scratch_database  # noqa: E402

KEY = "bench-callback-key"
STATS = json.dumps([{"fileId": "f-0", "path": "p/.f-0_1.log.1", "numWrites": 100, "totalWriteBytes": 4096}])
_instants = itertools.count()  # unique instants across the whole run: milliseconds from 2099-01-01
_FIRST_DAY = 4_102_444_800  # 2099-01-01 00:00:00 UTC, in epoch seconds


def _instant(n: int) -> str:
    """The n-th instant: a real date and time (the service refuses others), n milliseconds after the first."""
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(_FIRST_DAY + n // 1000)) + f"{n % 1000:03d}"


@dataclass
class Result:
    name: str
    requests: int = 0
    events: int = 0
    seconds: float = 0.0
    service_cpu: float = 0.0  # seconds of CPU
    database_cpu: float = 0.0
    latencies: list[float] = field(default_factory=list)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    @property
    def eps(self) -> float:
        return self.events / self.seconds

    def cpu_ms(self, seconds: float) -> float:
        return seconds / self.requests * 1000

    def ms(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


@dataclass(frozen=True)
class Endpoint:
    name: str
    path: str
    events_per_request: int
    body: Callable[[], bytes]
    concurrency: int


def _event(table_id: int) -> str:
    return (f'{{"table_id":{table_id},"instant":"{_instant(next(_instants))}","action":"deltacommit",'
            f'"write_stats":{STATS}}}')


def _single_body(table_id: int) -> bytes:
    return _event(table_id).encode()


def _batch_body(table_id: int, size: int) -> bytes:
    return ('{"events":[' + ",".join(_event(table_id) for _ in range(size)) + "]}").encode()


class Connection:
    """One keep-alive HTTP/1.1 connection; enough of the protocol for uvicorn's responses."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        self.writer.write(f"POST {path} HTTP/1.1\r\nHost: bench\r\nHUDI-CALLBACK-KEY: {KEY}\r\n"
                          f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = next((int(line.split(b":", 1)[1]) for line in lines
                       if line.lower().startswith(b"content-length:")), 0)
        return int(lines[0].split()[1]), await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


async def _measure(endpoint: Endpoint, port: int, seconds: float, result: Result) -> None:
    connections = [await Connection.open(port) for _ in range(endpoint.concurrency)]
    deadline = time.perf_counter() + seconds

    async def client(connection: Connection) -> None:
        while time.perf_counter() < deadline:
            body = endpoint.body()
            start = time.perf_counter()
            status, text = await connection.post(endpoint.path, body)
            result.latencies.append(time.perf_counter() - start)
            if status != 202:
                raise SystemExit(f"{endpoint.name}: HTTP {status}: {text[:200]!r}")
            result.requests += 1
            result.events += endpoint.events_per_request

    began = time.perf_counter()
    await asyncio.gather(*(client(c) for c in connections))
    result.seconds += time.perf_counter() - began
    for connection in connections:
        connection.close()


def _cpu_seconds(pids: list[int]) -> float:
    """User and system CPU time of these processes (Linux /proc; 0 elsewhere)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU spent by the service process and by the PostgreSQL backends serving its database."""

    def __init__(self, service_pid: int, database_url: str):
        self.service_pid = service_pid
        self.conninfo = libpq_url(database_url)

    def backends(self) -> list[int]:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            return [pid for (pid,) in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")]

    def measure(self, run: Callable[[], None], result: Result) -> None:
        backends = self.backends()
        service, database = _cpu_seconds([self.service_pid]), _cpu_seconds(backends)
        run()
        result.service_cpu += _cpu_seconds([self.service_pid]) - service
        # Backends opened meanwhile count from zero; the others from their start figure.
        result.database_cpu += _cpu_seconds(backends) - database + _cpu_seconds(
            [pid for pid in self.backends() if pid not in backends])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def bench_app() -> FastAPI:
    """The service's app with the baseline route: same app, same authentication, no parsing, no database."""
    app = create_app()

    @app.post("/bench/noop", status_code=status.HTTP_202_ACCEPTED)
    async def noop(credential: Writer) -> None:
        pass

    return app


def _start_service(database_url: str) -> tuple[subprocess.Popen, int]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    env.update(TMS_DATABASE_URL=database_url, TMS_CALLBACK_KEY=KEY, TMS_LOG_LEVEL="WARNING")
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "--factory", "ingest:bench_app",
                             "--app-dir", str(REPO / "bench"), "--port", str(port), "--no-access-log",
                             "--log-level", "warning"], cwd=REPO, env=env)
    for _ in range(300):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc, port
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the service did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each measurement")
    parser.add_argument("--rounds", type=int, default=5, help="measurements per endpoint (median reported)")
    parser.add_argument("--concurrency", type=int, default=32, help="client connections (a quarter for batches)")
    parser.add_argument("--batch-size", type=int, default=500, help="events per batch POST")
    args = parser.parse_args()

    with scratch_database() as database_url:
        database = Database(database_url)
        with database.transaction() as session:
            table_id = TableRepo(session).register(base_path="/bench/table", name="bench", database="default",
                                                   table_type="MERGE_ON_READ", table_version=8).id
        single = partial(_single_body, table_id)
        batch = partial(_batch_body, table_id, args.batch_size)
        endpoints = [
            Endpoint("no-op", "/bench/noop", 0, single, args.concurrency),
            Endpoint("single event", "/api/v1/events", 1, single, args.concurrency),
            Endpoint(f"batch of {args.batch_size}", "/api/v1/events:batch", args.batch_size, batch,
                     max(1, args.concurrency // 4)),
        ]
        proc, port = _start_service(database_url)
        meter = CpuMeter(proc.pid, database_url)
        rounds: dict[str, list[Result]] = {e.name: [] for e in endpoints}
        load_before = os.getloadavg()
        try:
            for endpoint in endpoints:  # warm-up: connections, caches, prepared statements
                asyncio.run(_measure(endpoint, port, 1.0, Result(endpoint.name)))
            for _ in range(args.rounds):
                for endpoint in endpoints:
                    result = Result(endpoint.name)
                    meter.measure(partial(asyncio.run, _measure(endpoint, port, args.seconds, result)), result)
                    rounds[endpoint.name].append(result)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        with database.autocommit() as conn:
            stored = conn.exec_driver_sql("SELECT count(*) FROM events").scalar_one()
        database.dispose()

    _report(args, [rounds[e.name] for e in endpoints], stored, (load_before, os.getloadavg()))


def _event_loop() -> str:
    """What uvicorn's automatic choice picks here: uvloop and httptools when installed."""
    found = [name for name in ("uvloop", "httptools") if importlib.util.find_spec(name)]
    return " and ".join(found) if found else "asyncio and h11"


def _report(args: argparse.Namespace, rounds: list[list[Result]], stored: int,
            load: tuple[tuple[float, ...], tuple[float, ...]]) -> None:
    """No-op and single events are measured back to back in each round, so the round with the median
    ratio is reported (the machine's other load shifts both alike); batches by their median round."""
    noop_rounds, single_rounds, batch_rounds = rounds
    pairs = list(zip(noop_rounds, single_rounds, strict=True))
    noop, single = sorted(pairs, key=lambda pair: pair[1].rps / pair[0].rps)[len(pairs) // 2]
    batch = sorted(batch_rounds, key=lambda r: r.eps)[len(batch_rounds) // 2]
    print(f"\nTMS intake benchmark: one uvicorn process, PostgreSQL, {os.cpu_count()} CPUs; {args.rounds} rounds "
          f"of {args.seconds:.0f} s per endpoint; {args.concurrency} connections "
          f"({max(1, args.concurrency // 4)} for batches); uvicorn on {_event_loop()}")
    print("load average (1, 5, 15 min): " + " -> ".join(", ".join(f"{x:.2f}" for x in la) for la in load)
          + " (before -> after)")
    print(f"{'endpoint':<16}{'requests/s':>12}{'events/s':>12}{'p50 ms':>9}{'p99 ms':>9}"
          f"{'CPU ms/request: service':>25}{'database':>10}   all rounds (requests/s)")
    for result, all_rounds in ((noop, noop_rounds), (single, single_rounds), (batch, batch_rounds)):
        spread = ", ".join(f"{r.rps:,.0f}" for r in all_rounds)
        print(f"{result.name:<16}{result.rps:>12,.0f}{result.eps:>12,.0f}{result.ms(0.5):>9.1f}"
              f"{result.ms(0.99):>9.1f}{result.cpu_ms(result.service_cpu):>25.3f}"
              f"{result.cpu_ms(result.database_cpu):>10.3f}   {spread}")
    ratios = ", ".join(f"{s.rps / n.rps:.2f}" for n, s in pairs)
    print(f"single events vs no-op requests: {single.rps / noop.rps:.2f}x, median round (goal >= 0.7x); "
          f"all rounds: {ratios}")
    per_event_us = (batch.service_cpu + batch.database_cpu) / batch.events * 1e6
    print(f"batch events/s: {batch.eps:,.0f}, median round (goal >= 50,000); CPU per event: {per_event_us:.1f} us "
          f"(service and database together: {1e6 / per_event_us:,.0f} events per CPU-second)")
    print(f"events stored: {stored:,} (each acknowledged event once, warm-up included)")


if __name__ == "__main__":
    main()
