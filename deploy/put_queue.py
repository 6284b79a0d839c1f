#!/usr/bin/env python3
"""Create or replace TMS resource queues through the HTTP API (installed in the image as `tms-put-queue`):
the one-shot that gives a fresh deployment its Spark queue before the worker starts.

    tms-put-queue FILE.json ...     PUT /api/v1/queues/<name> for each file (name: the file's stem)

The service is TMS_URL (default http://service:8080), authenticated with TMS_ADMIN_TOKEN. Waits up to
TMS_WAIT_SECONDS (120) for the service to answer. Exit 0 when every queue was stored; else 1, with the
server's reason."""
from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


def put_queue(url: str, token: str, name: str, body: dict, wait_seconds: float) -> str | None:
    request = urllib.request.Request(
        f"{url.rstrip('/')}/api/v1/queues/{name}", method="PUT", data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            with urllib.request.urlopen(request, timeout=10):
                return None
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace").strip()
            if e.code < 500 or time.monotonic() >= deadline:
                return f"queue {name}: HTTP {e.code}: {detail}"
        except OSError as e:  # not up yet
            if time.monotonic() >= deadline:
                return f"queue {name}: {url}: {getattr(e, 'reason', e)}"
        time.sleep(2)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    url = os.environ.get("TMS_URL", "http://service:8080")
    token = os.environ.get("TMS_ADMIN_TOKEN", "")
    wait = float(os.environ.get("TMS_WAIT_SECONDS", "120"))
    if not token:
        print("error: TMS_ADMIN_TOKEN is not set", file=sys.stderr)
        return 1
    for path in map(Path, argv):
        try:
            body = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            print(f"error: {path}: {e}", file=sys.stderr)
            return 1
        problem = put_queue(url, token, path.stem, body, wait)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 1
        print(f"queue {path.stem}: {body.get('kind')} {body.get('master')}, capacity {body.get('capacity', 1)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
