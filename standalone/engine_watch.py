"""What `tms up` says of the worker's warm Spark engine: it starts with the roles, takes a while (a JVM, its
Python workers), and the first job waits for it. Read from the worker's log, which names each start and when
the engine is ready (worker/warm_engine.py): "starting Spark for the first job ..." then "Spark is ready"."""
from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

# The worker's log lines (worker/warm_engine.py) this reads.
_LINE = re.compile(r"warm engine of queue (?P<queue>\S+): (?P<what>starting|ready)\b")
POLL_SECONDS = 0.5


class EngineWatch:
    """Follows `log` from its current end and echoes the warm engine's first start and readiness, once each."""

    def __init__(self, log: Path, echo: Callable[[str], None]):
        self.log, self.echo = log, echo
        self._offset = log.stat().st_size if log.exists() else 0
        self._started_at: float | None = None
        self._done = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="engine-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._done and not self._stop.wait(POLL_SECONDS):
            self.poll()

    def poll(self) -> None:
        try:
            with open(self.log, "rb") as log:
                log.seek(self._offset)
                chunk = log.read()
        except OSError:
            return
        complete = chunk[:chunk.rfind(b"\n") + 1]  # whole lines only; the rest is read next time
        self._offset += len(complete)
        for line in complete.decode(errors="replace").splitlines():
            found = _LINE.search(line)
            if found is None or self._done:
                continue
            if found["what"] == "starting" and self._started_at is None:
                self._started_at = time.monotonic()
                self.echo(f"starting Spark for the first job (the warm engine of queue {found['queue']}) ...")
            elif found["what"] == "ready":
                took = f" after {time.monotonic() - self._started_at:.0f} s" if self._started_at else ""
                self.echo(f"Spark is ready{took}: jobs run on the warm engine of queue {found['queue']}")
                self._done = True
