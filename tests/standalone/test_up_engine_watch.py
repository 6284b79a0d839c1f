"""`tms up` says when the worker starts Spark for the first job and when it is ready, read from the worker's
log as the worker writes it (worker/warm_engine.py's lines, in the roles' log format)."""
from __future__ import annotations

import logging

from standalone.engine_watch import EngineWatch
from tms.instance import LOG_FORMAT
from worker import warm_engine


def _log_as_the_worker(path, message: str, *args) -> None:
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    warm_engine.log.addHandler(handler)
    level = warm_engine.log.level
    warm_engine.log.setLevel(logging.INFO)
    try:
        warm_engine.log.info(message, *args)
    finally:
        warm_engine.log.removeHandler(handler)
        warm_engine.log.setLevel(level)
        handler.close()


def test_the_first_start_and_readiness_are_said_once(tmp_path):
    log = tmp_path / "worker.log"
    log.write_text("a line of an earlier start: warm engine of queue local: ready (app-0)\n")
    said: list[str] = []
    watch = EngineWatch(log, said.append)
    watch.poll()
    assert said == []  # what the log held before this start is not this start's
    _log_as_the_worker(log, "warm engine of queue %s: starting (pid %s)", "local", 42)
    watch.poll()
    assert said == ["starting Spark for the first job (the warm engine of queue local) ..."]
    _log_as_the_worker(log, "warm engine of queue %s: ready (%s)", "local", "local-1")
    _log_as_the_worker(log, "warm engine of queue %s: starting (pid %s)", "local", 43)  # a restart: not said
    watch.poll()
    assert len(said) == 2 and said[1].startswith("Spark is ready after ") and said[1].endswith(
        " s: jobs run on the warm engine of queue local"), said
