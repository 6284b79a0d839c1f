"""`tms up` (what `./dev run` starts) keeps up with its demo writer: with a commit every 2 s for 4 minutes,
the tasks waiting to run (pending, held or runnable) never number more than 2 after the first minute, the
compactions run on the local queue's warm engine, and the demo table stays healthy: a handful of file groups
per city, not one more with every commit (new trips fill the small file groups, clustering merges the rest)."""
from __future__ import annotations

import os
import signal
import time

import httpx
import pytest
from up_support import UpProcess, clean_env

from tms.hudi.table.hudi_table import HudiTable

DURATION_SECONDS = float(os.environ.get("TMS_TEST_KEEP_UP_SECONDS", 240))
# 4 minutes (120 commits) show a growing backlog or file-group count: before the small-file routing the demo
# had 45 file groups a few minutes in. The README gives the figures of a 60-minute run.
WAITING = ("PENDING", "BLOCKED", "RUNNABLE")
# At most this many file groups per city at the end: the one new trips fill (the first commit's inserts make
# one per city; one more when a city's group was being clustered as trips arrived).
MAX_FILE_GROUPS_PER_CITY = 2


def _count(up: UpProcess, headers: dict[str, str], **params) -> int:
    response = httpx.get(f"{up.url}/api/v1/tasks", params={"limit": 1, **params}, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return int(response.json()["total"])


@pytest.mark.slow
@pytest.mark.waiting
@pytest.mark.timeout(DURATION_SECONDS + 600)
def test_the_demo_never_builds_a_backlog(tmp_path, data_dir):
    up = UpProcess(data_dir, clean_env(tmp_path / "run"), "--interval", "2")
    try:
        headers = {"Authorization": f"Bearer {up.wait_for('admin token: ').split()[2]}"}
        up.wait_for("TMS is up")
        started = time.monotonic()
        waiting: list[tuple[float, int]] = []
        while (elapsed := time.monotonic() - started) < DURATION_SECONDS:
            if elapsed >= 60:
                waiting.append((round(elapsed), sum(_count(up, headers, state=s) for s in WAITING)))
            time.sleep(5)
        succeeded = httpx.get(f"{up.url}/api/v1/tasks", headers=headers, timeout=30,
                              params={"state": "SUCCEEDED", "service": "compaction", "limit": 5}).json()["items"]
        on_warm = []
        for t in succeeded:
            detail = httpx.get(f"{up.url}/api/v1/tasks/{t['id']}", headers=headers, timeout=30).json()
            on_warm += [a["engine_kind"] == "warm" for a in detail["attempts"] if a["outcome"] == "SUCCEEDED"]
        up.process.send_signal(signal.SIGTERM)
        assert up.wait(timeout=120) == 0, up.output[-3000:]
    finally:
        up.kill()

    view = HudiTable.load(str(data_dir / "tables" / "trips")).file_system_view()
    groups = {p: len(view.file_groups(p)) for p in view.partitions}
    print(f"file groups per city after {DURATION_SECONDS:.0f} s: {groups}")
    assert max(groups.values()) <= MAX_FILE_GROUPS_PER_CITY, groups
    assert max(n for _, n in waiting) <= 2, f"waiting tasks over time (s, count): {waiting}"
    assert succeeded and all(on_warm), f"compactions that succeeded, on the warm engine: {on_warm}"
