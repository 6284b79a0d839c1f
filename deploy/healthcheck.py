#!/usr/bin/env python3
"""Container health checks of the TMS roles (installed in the image as `tms-healthcheck`).

    tms-healthcheck http [URL]        exit 0 when URL answers 2xx (default: this container's service, /readyz)
    tms-healthcheck heartbeat ROLE    exit 0 when a process of ROLE on this host (the container's hostname, a
                                      pod's name) recorded a heartbeat lately: its loop runs and it reaches the
                                      database. For the roles without an HTTP port: planner, worker, manager.

A failed check prints one line saying why (docker inspect / kubectl describe show it) and exits 1."""
from __future__ import annotations

import os
import re
import socket
import sys
import urllib.error
import urllib.request

# A heartbeat older than this many heartbeat intervals (TMS_HEARTBEAT_SECONDS) fails the check.
MISSED_BEATS = 3
SLACK_SECONDS = 10.0


def check_http(url: str, timeout: float = 5.0) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            if 200 <= response.status < 300:
                return None
            return f"{url}: HTTP {response.status}"
    except urllib.error.HTTPError as e:
        return f"{url}: HTTP {e.code}"
    except (OSError, ValueError) as e:
        return f"{url}: {getattr(e, 'reason', e)}"


def check_heartbeat(role: str, host: str | None = None) -> str | None:
    """None when an instance of `role` on `host` beat within MISSED_BEATS heartbeat intervals."""
    import psycopg  # not tms.db: a probe runs every few seconds, and the ORM takes a second to import

    from tms.config import load_settings

    settings = load_settings()
    if not settings.database_url:  # never start an embedded database from a health check
        return "TMS_DATABASE_URL is not set"
    host = host or socket.gethostname()
    # A role may beat at its own interval (the manager's TMS_MANAGER_HEARTBEAT_SECONDS).
    interval = max(settings.heartbeat_seconds, getattr(settings, f"{role}_heartbeat_seconds", 0) or 0)
    max_age = MISSED_BEATS * interval + SLACK_SECONDS
    url = re.sub(r"^postgres(ql)?(\+\w+)?://", "postgresql://", settings.database_url)
    try:
        with psycopg.connect(url, connect_timeout=5) as connection:
            age = connection.execute(
                "SELECT EXTRACT(EPOCH FROM now() - max(heartbeat_at)) FROM instances "
                "WHERE host = %s AND %s = ANY(roles)", (host, role)).fetchone()[0]
    except Exception as e:  # the database is unreachable: the role cannot work either
        return f"database: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}"
    if age is None:
        return f"no {role} heartbeat from host {host}"
    if float(age) > max_age:
        return f"the last {role} heartbeat from host {host} is {float(age):.0f} s old (limit {max_age:.0f} s)"
    return None


def main(argv: list[str]) -> int:
    if argv[:1] == ["http"] and len(argv) <= 2:
        url = argv[1] if len(argv) == 2 else f"http://127.0.0.1:{os.environ.get('TMS_PORT', '8080')}/readyz"
        problem = check_http(url)
    elif argv[:1] == ["heartbeat"] and len(argv) == 2:
        problem = check_heartbeat(argv[1])
    else:
        print("\n".join(__doc__.strip().splitlines()[2:4]), file=sys.stderr)
        return 2
    if problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
