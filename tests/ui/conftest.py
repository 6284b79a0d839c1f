"""A `tms up`-like stack for the browser tests: the service and a worker as processes on a scratch database,
tables registered from the shared fixtures through the API, tasks recorded through the repositories; and
headless Chromium (Debian's, installed by ./dev) driven by Playwright, with every request that leaves the
machine aborted and recorded."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, Page, Route, sync_playwright
from support import TIMEOUT_SCALE

from tms.db import Database, TablePolicy, TokenRepo
from tms.db.testing import scratch_database
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.timeline.instant import instant_to_datetime, parse_instant_file_name
from tms.planning.schedule import schedule
from tms.timeline_zone import local_zone

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ADMIN_TOKEN = "admin-token-for-browser-tests"
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Stack:
    url: str
    database: Database
    tables_root: Path
    tokens: dict[str, str] = field(default_factory=dict)
    logs: list[Path] = field(default_factory=list)

    def api(self, method: str, path: str, **kwargs) -> httpx.Response:
        return httpx.request(method, self.url + path, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                             timeout=30, **kwargs)

    def register(self, source: Path, name: str, **fields) -> dict:
        """Copy a fixture table under the stack's storage root and register it (as an admin would)."""
        base_path = shutil.copytree(source, self.tables_root / name)
        _restore_completion_times(base_path / ".hoodie")
        response = self.api("POST", "/api/v1/tables", json={"base_path": str(base_path), **fields})
        assert response.status_code == 201, response.text
        return response.json()

    def plan_compaction(self, table: dict) -> str:
        """Write a compaction plan on the table's timeline (what `tms schedule` does); its instant."""
        policy = TablePolicy.from_stored({"hoodie.compact.inline.max.delta.commits": 1})
        result = schedule(HudiTable.load(table["base_path"]), "compaction", policy, datetime.now(UTC))
        assert result.planned, "no compaction could be planned on the fixture table"
        return result.planned[0].instant


def _restore_completion_times(timeline: Path) -> None:
    """A v6 instant's completion time is its completed file's modification time, which the fixtures' zips do
    not keep: set it to a second after the instant, as the writer that completed it would have left it."""
    for instant_file in timeline.iterdir():
        instant = parse_instant_file_name(instant_file.name)
        if instant is not None and instant.is_completed:
            completed = instant_to_datetime(instant.timestamp, local_zone()).timestamp() + 1
            os.utime(instant_file, (completed, completed))


def _start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TMS_")}
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, *argv], cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                env={**clean, **env}, start_new_session=True)


def _stop(processes: list[subprocess.Popen]) -> None:
    for proc in processes:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in processes:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="session")
def stack(tmp_path_factory) -> Iterator[Stack]:
    """The service (uvicorn) and a worker running plans as plain Python processes, on one scratch database."""
    root = tmp_path_factory.mktemp("stack")
    tables_root = root / "tables"
    tables_root.mkdir()
    with scratch_database() as database_url:
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        env = {"TMS_DATABASE_URL": database_url, "TMS_ADMIN_TOKEN": ADMIN_TOKEN, "TMS_DATA_DIR": str(root / "data"),
               "TMS_STORAGE_ROOTS": str(tables_root), "TMS_HEARTBEAT_SECONDS": "1", "TMS_PORT": str(port),
               "TMS_WORKER_POLL_SECONDS": "0.3", "TMS_WORKER_LEASE_SECONDS": "8", "TMS_LOG_LEVEL": "WARNING"}
        logs = [root / "service.log", root / "worker.log"]
        processes = [_start(["-m", "uvicorn", "--factory", "service.app:create_app", "--port", str(port),
                             "--no-access-log", "--log-level", "warning"], env, logs[0])]
        try:
            deadline = time.monotonic() + 60 * TIMEOUT_SCALE
            while True:
                assert processes[0].poll() is None, logs[0].read_text()
                try:
                    if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, logs[0].read_text()
                time.sleep(0.2)
            processes.append(_start(["-m", "tms.cli", "worker", "--runner", "python", "--service-url", url],
                                    env, logs[1]))
            database = Database(database_url)
            stack = Stack(url=url, database=database, tables_root=tables_root, logs=logs)
            with database.transaction() as session:
                for role in ("viewer", "operator", "admin"):
                    stack.tokens[role] = TokenRepo(session).create(role, f"browser test {role}")[1]
            yield stack
            database.dispose()
        finally:
            _stop(processes)


@dataclass
class Browsing:
    browser: Browser
    screenshots: Path
    blocked: list[str] = field(default_factory=list)  # requests that would have left the machine

    def page(self) -> Page:
        """A fresh browser context (no cookies) whose requests off this machine are aborted and recorded in
        `blocked` (emptied here: it holds what the pages since the last call tried)."""
        self.blocked.clear()
        context = self.browser.new_context(viewport={"width": 1400, "height": 900})

        def route(route: Route) -> None:
            host = urlsplit(route.request.url).hostname or ""
            if route.request.url.startswith(("data:", "blob:")) or host in LOOPBACK:
                route.continue_()
            else:
                self.blocked.append(route.request.url)
                route.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.set_default_timeout(15_000)
        return page

    def shot(self, page: Page, name: str, full_page: bool = True) -> Path:
        path = self.screenshots / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        return path


@pytest.fixture(scope="session")
def browsing(tmp_path_factory) -> Iterator[Browsing]:
    """Headless Chromium; screenshots in TMS_UI_SCREENSHOTS if set, else in the session's tmp folder."""
    assert os.access(CHROMIUM, os.X_OK), f"{CHROMIUM} is missing: ./dev test installs Debian's chromium package"
    folder = Path(os.environ.get("TMS_UI_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield Browsing(browser=browser, screenshots=folder)
        finally:
            browser.close()

