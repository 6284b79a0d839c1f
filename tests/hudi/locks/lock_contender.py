"""A process contending for a table's lock, for the lock tests (run as a script):

    python lock_contender.py --base BASE --options JSON --log FILE --rounds N --hold-ms M
        take the lock N times, each time appending `acquire <id>` and `release <id>` to FILE around a hold
    python lock_contender.py --base BASE --options JSON --hold-forever
        take the lock, print `held`, and wait to be killed (a holder that dies with the lock)"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from tms.hudi.locks.config import parse_concurrency_options
from tms.hudi.locks.lock_manager import LockManager


def append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--options", required=True)
    ap.add_argument("--log")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--hold-ms", type=int, default=20)
    ap.add_argument("--hold-forever", action="store_true")
    args = ap.parse_args()
    config = parse_concurrency_options(json.loads(args.options), base_path=args.base, table_name="t")
    manager = LockManager(config)
    me = f"{os.getpid()}"
    if args.hold_forever:
        manager.lock()
        print("held", flush=True)
        while True:
            time.sleep(60)
    for _ in range(args.rounds):
        manager.lock()
        try:
            append(args.log, f"acquire {me}")
            time.sleep(args.hold_ms / 1000)
            append(args.log, f"release {me}")
        finally:
            manager.unlock()
    manager.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
