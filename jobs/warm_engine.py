"""The driver of a queue's warm engine: one long-running Spark application with fixed executors that runs the
plans the worker hands it, each as `jobs/run.py` would (same arguments, fence, lock, exit status), without a
spark-submit of its own. The worker starts it with spark-submit and restarts it when it dies.

    spark-submit [fixed executors] --py-files tms-jobs.zip jobs/warm_engine.py --socket PATH

It listens on a Unix socket (in a folder only the worker's user can enter) and speaks one JSON object per
line. A connection sends one request:
- `{"op": "ping"}` -> `{"app_id": ...}`
- `{"op": "run", "group": G, "args": [jobs/run.py arguments]}` -> `{"out": line}`... then `{"exit": status}`.
  The plan's Spark jobs run in job group G; plans run concurrently, each in its own connection's thread. With
  `"job": MODULE` (one of tms.table_services.WARM_ENGINE_JOBS: archival's), the request job MODULE's main(args)
  runs in that thread instead, without Spark.
- `{"op": "cancel", "group": G}` -> `{"cancelled": G}`: cancels G's Spark jobs (cancelJobGroup), and the plan
  starts no further Spark job; its driver stops at the next one, or at its fence (the worker ends the attempt).

Warm means the JVM, the executors and the Python workers: the engine runs a warm-up job in every task slot
before it answers and again whenever it was idle for a while, so that Spark keeps a Python worker with the
plans' modules loaded in each slot (it stops Python workers idle for a minute).
"""
from __future__ import annotations

import argparse
import ctypes
import importlib
import io
import json
import os
import signal
import socketserver
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from typing import Any, TextIO

from jobs.run import parse_args, run_plan
from tms.config import load_settings
from tms.execute.runner import TaskFunction
from tms.table_services import WARM_ENGINE_JOBS

KEEP_WARM_SECONDS = 20.0  # Spark stops Python workers idle for a minute: idle engines run a warm-up job this often
WARM_UP_GROUP = "tms-warm-up"
_PR_SET_PDEATHSIG = 1
_cancelled: dict[str, threading.Event] = {}
_cancelled_lock = threading.Lock()


def _cancel_event(group: str) -> threading.Event:
    with _cancelled_lock:
        return _cancelled.setdefault(group, threading.Event())


class PlanCancelled(Exception):
    pass


class _ThreadOutput(io.TextIOBase):
    """sys.stdout/sys.stderr of the engine: what a plan's thread prints goes to that plan's connection; the
    rest (Spark's own messages, the engine's) to the application's log."""

    def __init__(self, fallback: TextIO):
        self.fallback = fallback
        self.local = threading.local()

    def write(self, text: str) -> int:
        sink = getattr(self.local, "sink", None)
        return sink(text) if sink is not None else self.fallback.write(text)

    def flush(self) -> None:
        self.fallback.flush()


class _GroupRunner:
    """SparkRunner in the plan's job group; refuses to start a Spark job once the group is cancelled."""

    def __init__(self, sc: Any, group: str, cancelled: threading.Event, part_bytes: int):
        from jobs.spark_runner import SparkRunner

        self.runner, self.sc, self.group, self.cancelled = SparkRunner(sc, part_bytes), sc, group, cancelled

    def map(self, fn: TaskFunction, tasks: Sequence[Any], description: str = "",
            sizes: Sequence[int] | None = None) -> list[Any]:
        if self.cancelled.is_set():
            raise PlanCancelled(f"plan {self.group} was cancelled")
        self.sc.setJobGroup(self.group, description, interruptOnCancel=True)
        results = self.runner.map(fn, tasks, description, sizes)
        if self.cancelled.is_set():
            raise PlanCancelled(f"plan {self.group} was cancelled")
        return results


def requested_job(request: dict[str, Any]) -> str | None:
    """The request job a `run` asks for (None: a plan, jobs/run.py's); ValueError for any module but those the
    registry lets a warm engine run (WARM_ENGINE_JOBS): nothing else is imported, whatever the request names."""
    job = request.get("job")
    if job is not None and job not in WARM_ENGINE_JOBS:
        raise ValueError(f"job {job!r} does not run on a warm engine")
    return None if job is None else str(job)


class _Handler(socketserver.StreamRequestHandler):
    server: EngineServer

    def handle(self) -> None:
        try:
            request = json.loads(self.rfile.readline())
            op = request["op"]
        except (ValueError, KeyError, TypeError):
            self._send({"error": "bad request"})
            return
        if op == "ping":
            self._send({"app_id": self.server.sc.applicationId})
        elif op == "cancel":
            group = str(request["group"])
            _cancel_event(group).set()
            self.server.sc.cancelJobGroup(group)
            self._send({"cancelled": group})
        elif op == "run":
            try:
                job = requested_job(request)
            except ValueError as e:
                self._send({"error": str(e)})
                return
            self._run(str(request["group"]), [str(a) for a in request["args"]], job)
        else:
            self._send({"error": f"unknown op {op!r}"})

    def _send(self, message: dict[str, Any]) -> None:
        self.wfile.write(json.dumps(message).encode() + b"\n")
        self.wfile.flush()

    def _run(self, group: str, argv: list[str], job: str | None = None) -> None:
        output: _ThreadOutput = self.server.output

        def sink(text: str) -> int:
            try:
                self._send({"out": text})
            except OSError:  # the worker went away; the plan goes on to its fence
                pass
            return len(text)

        output.local.sink = sink
        self.server.last_plan_at = time.monotonic()
        cancelled = _cancel_event(group)
        try:
            print(f"spark application id: {self.server.sc.applicationId} (warm engine, job group {group})")
            if job is not None:  # a request's job (archival): its module's main, in this thread, without Spark
                try:
                    status = importlib.import_module(job).main(argv)
                except SystemExit as e:  # its argument parser's refusal: the job's exit status, not the engine's
                    status = e.code if isinstance(e.code, int) else 1
            else:
                status = run_plan(parse_args(argv), _GroupRunner(self.server.sc, group, cancelled,
                                                                 self.server.part_bytes))
        except PlanCancelled as e:
            print(f"error: {e}", file=sys.stderr)
            status = 1
        except Exception as e:  # a Spark job cancelled or failed: this plan fails, the engine goes on
            traceback.print_exc()
            print(f"error: {'cancelled: ' if cancelled.is_set() else ''}{type(e).__name__}: "
                  f"{str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
            status = 1
        finally:
            output.local.sink = None
            self.server.last_plan_at = time.monotonic()
            with _cancelled_lock:
                _cancelled.pop(group, None)
        try:
            self._send({"exit": status})
        except OSError:
            pass


def _warm_up_task(_: int) -> int:
    """Import what a plan's tasks import, in a Python worker that Spark keeps for the next tasks; stay a moment
    so that every task slot gets a task of its own."""
    import tms.execute.dispatch  # noqa: F401 (every executor: compaction, clustering, clean, rollback)

    time.sleep(0.2)
    return os.getpid()


def warm_up(sc: Any) -> None:
    """Start (or keep) a Python worker with the executors' modules loaded in every task slot."""
    sc.setJobGroup(WARM_UP_GROUP, "warm-up: the plans' modules in every Python worker")
    slots = max(1, sc.defaultParallelism)
    sc.parallelize(range(slots), slots).map(_warm_up_task).collect()


def _keep_warm(server: EngineServer) -> None:
    while True:
        time.sleep(KEEP_WARM_SECONDS)
        if time.monotonic() - server.last_plan_at >= KEEP_WARM_SECONDS:
            try:
                warm_up(server.sc)
            except Exception as e:  # the engine may be stopping; plans report their own errors
                print(f"warm-up failed: {e}", file=sys.__stderr__)


def _die_with_the_jvm() -> None:
    """This driver is spark-submit's child: when that JVM dies (killed, its worker gone), so does the driver,
    rather than listen on with a dead SparkContext (Linux; elsewhere the worker kills the process group)."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == 1:  # the JVM died before the call
            os._exit(1)


class EngineServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, sc: Any, output: _ThreadOutput, part_bytes: int):
        self.sc, self.output, self.part_bytes = sc, output, part_bytes
        self.last_plan_at = time.monotonic()
        super().__init__(path, _Handler)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="jobs/warm_engine.py", description="A queue's warm Spark engine.")
    ap.add_argument("--socket", required=True, help="the Unix socket to listen on")
    ap.add_argument("--name", default="tms warm engine", help="the Spark application's name")
    args = ap.parse_args(argv)
    _die_with_the_jvm()
    from pyspark import SparkContext

    from jobs.spark_runner import driver_conf

    settings = load_settings()
    sc = SparkContext.getOrCreate(driver_conf(args.name, settings))  # RDD tasks only: no SparkSession
    warm_up(sc)  # before it answers: the first plan finds its Python workers ready
    output = _ThreadOutput(sys.stdout)
    sys.stdout = sys.stderr = output
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    server = EngineServer(args.socket, sc, output, settings.worker.part_bytes)
    threading.Thread(target=_keep_warm, args=(server,), name="keep-warm", daemon=True).start()
    print(f"spark application id: {sc.applicationId}; warm engine listening on {args.socket}", flush=True)
    try:
        server.serve_forever()
    finally:
        sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
