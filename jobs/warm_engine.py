"""The driver of a queue's warm engine: one long-running Spark application with fixed executors that runs the
plans the worker hands it, each as `jobs/run.py` would (same arguments, fence, lock, exit status), without a
spark-submit of its own. The worker starts it with spark-submit and restarts it when it dies.

    spark-submit [fixed executors] --py-files tms-jobs.zip jobs/warm_engine.py --socket PATH

It listens on a Unix socket (in a folder only the worker's user can enter) and speaks one JSON object per
line. A connection sends one request:
- `{"op": "ping"}` -> `{"app_id": ...}`
- `{"op": "run", "group": G, "args": [jobs/run.py arguments]}` -> `{"out": line}`... then `{"exit": status}`.
  The plan's Spark jobs run in job group G; plans run concurrently, each in its own connection's thread.
- `{"op": "cancel", "group": G}` -> `{"cancelled": G}`: cancels G's Spark jobs (cancelJobGroup), and the plan
  starts no further Spark job; its driver stops at the next one, or at its fence (the worker ends the attempt).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import socketserver
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import Any, TextIO

from jobs.run import parse_args, run_plan
from tms.execute.runner import TaskFunction

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

    def __init__(self, sc: Any, group: str, cancelled: threading.Event):
        from jobs.spark_runner import SparkRunner

        self.runner, self.sc, self.group, self.cancelled = SparkRunner(sc), sc, group, cancelled

    def map(self, fn: TaskFunction, tasks: Sequence[Any], description: str = "") -> list[Any]:
        if self.cancelled.is_set():
            raise PlanCancelled(f"plan {self.group} was cancelled")
        self.sc.setJobGroup(self.group, description, interruptOnCancel=True)
        results = self.runner.map(fn, tasks, description)
        if self.cancelled.is_set():
            raise PlanCancelled(f"plan {self.group} was cancelled")
        return results


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
            self._run(str(request["group"]), [str(a) for a in request["args"]])
        else:
            self._send({"error": f"unknown op {op!r}"})

    def _send(self, message: dict[str, Any]) -> None:
        self.wfile.write(json.dumps(message).encode() + b"\n")
        self.wfile.flush()

    def _run(self, group: str, argv: list[str]) -> None:
        output: _ThreadOutput = self.server.output

        def sink(text: str) -> int:
            try:
                self._send({"out": text})
            except OSError:  # the worker went away; the plan goes on to its fence
                pass
            return len(text)

        output.local.sink = sink
        cancelled = _cancel_event(group)
        try:
            print(f"spark application id: {self.server.sc.applicationId} (warm engine, job group {group})")
            status = run_plan(parse_args(argv), _GroupRunner(self.server.sc, group, cancelled))
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
            with _cancelled_lock:
                _cancelled.pop(group, None)
        try:
            self._send({"exit": status})
        except OSError:
            pass


class EngineServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, sc: Any, output: _ThreadOutput):
        self.sc, self.output = sc, output
        super().__init__(path, _Handler)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="jobs/warm_engine.py", description="A queue's warm Spark engine.")
    ap.add_argument("--socket", required=True, help="the Unix socket to listen on")
    ap.add_argument("--name", default="tms warm engine", help="the Spark application's name")
    args = ap.parse_args(argv)
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName(args.name).getOrCreate()
    output = _ThreadOutput(sys.stdout)
    sys.stdout = sys.stderr = output
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    server = EngineServer(args.socket, spark.sparkContext, output)
    print(f"spark application id: {spark.sparkContext.applicationId}; warm engine listening on {args.socket}",
          flush=True)
    try:
        server.serve_forever()
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
