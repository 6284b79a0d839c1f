import os
import resource
import time
from pathlib import Path

import pytest
from support import FIXTURE_TABLES, unzip_fixture

# TMS_TEST_TIMES=<file>: each test's wall and CPU seconds (this process and the children it waited for) are
# written there, the slowest first, for balancing the suite's lanes (./dev test): a test whose wall time is
# much more than its CPU time mostly waits, and belongs in a lane of waiting tests.
_TIMES_FILE = os.environ.get("TMS_TEST_TIMES")
_times: list[tuple[str, float, float]] = []


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _TIMES_FILE:
        yield
        return
    wall, cpu = time.monotonic(), _cpu_seconds()
    yield
    _times.append((item.nodeid, time.monotonic() - wall, _cpu_seconds() - cpu))


def pytest_sessionfinish(session):
    if _TIMES_FILE and _times:
        lines = [f"{wall:.1f}\t{cpu:.1f}\t{test}" for test, wall, cpu in sorted(_times, key=lambda t: -t[1])]
        Path(_TIMES_FILE).write_text("wall_s\tcpu_s\ttest\n" + "\n".join(lines) + "\n")


@pytest.fixture(scope="session")
def fixtures_root(tmp_path_factory):
    """All fixture tables unzipped once per session, side by side (read-only: copy before changing one)."""
    root = tmp_path_factory.mktemp("fixtures")
    for name in FIXTURE_TABLES:
        unzip_fixture(name, root)
    return root


@pytest.fixture(scope="session")
def fixture_tables(fixtures_root):
    """Fixture name (the zip's) -> the table's base path."""
    return {name: fixtures_root / folder for name, folder in FIXTURE_TABLES.items()}


@pytest.fixture(scope="session")
def scratch_db():
    """One scratch PostgreSQL database for the session (see tms.db.testing), migrated to head."""
    from tms.db import Database
    from tms.db.testing import scratch_database
    with scratch_database() as url:
        database = Database(url, pool_size=20)
        yield database
        database.dispose()


@pytest.fixture
def db(scratch_db):
    """The session's scratch database, with every table emptied."""
    from sqlalchemy import text

    from tms.db.models import Base
    names = ", ".join(t.name for t in Base.metadata.sorted_tables)
    with scratch_db.transaction() as session:
        session.execute(text(f"TRUNCATE {names} CASCADE"))
    return scratch_db


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory):
    """An S3 API (the moto server) on loopback with a bucket, for the session; the AWS variables that
    reach it are set in this process (and so passed on to the processes the tests start)."""
    from s3_endpoint import S3Endpoint
    endpoint = S3Endpoint.start(tmp_path_factory.mktemp("s3") / "moto.log")
    yield from _serving(endpoint)


def _serving(endpoint):
    """Yield `endpoint` with the variables that reach it set in this process (and so passed on to the processes
    the tests start); stop it afterwards."""
    try:
        with pytest.MonkeyPatch.context() as mp:
            for name, value in endpoint.env().items():
                mp.setenv(name, value)
            yield endpoint
    finally:
        endpoint.stop()


def _fresh_key(request) -> str:
    """A key prefix no other test uses: the test's name and a random suffix."""
    import re
    import uuid
    return f"{re.sub(r'[^A-Za-z0-9_-]', '-', request.node.name)[:60]}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def s3_base(s3_endpoint, request):
    """A fresh key prefix per test: `s3://bucket/<test name>` (no trailing slash)."""
    return s3_endpoint.uri(_fresh_key(request))


@pytest.fixture(scope="session")
def azure_endpoint(tmp_path_factory):
    """Azure Blob storage (Azurite) on loopback with a container, for the session; the variables that reach it
    are set in this process (and so passed on to the processes the tests start)."""
    from azure_endpoint import AzureEndpoint
    endpoint = AzureEndpoint.start(tmp_path_factory.mktemp("azurite"))
    yield from _serving(endpoint)


@pytest.fixture
def azure_base(azure_endpoint, request):
    """A fresh prefix per test: `az://container/<test name>` (no trailing slash)."""
    return azure_endpoint.uri(_fresh_key(request))


@pytest.fixture(params=["s3", "azure"])
def store_endpoint(request):
    """Each object store with a conditional create in turn, on loopback: S3 (moto), Azure Blob storage (Azurite)."""
    return request.getfixturevalue(f"{request.param}_endpoint")


@pytest.fixture
def store_base(store_endpoint, request):
    """A fresh base path on `store_endpoint` (no trailing slash)."""
    return store_endpoint.uri(_fresh_key(request))


@pytest.fixture(scope="session")
def java_hudi(tmp_path_factory):
    """java_hudi(table_version) -> the session's warm Java Hudi driver of the release that writes that version
    (tests/hudi_java); a machine without the harness fails the test in one line naming what is missing."""
    from hudi_java.harness import DriverPool

    pool = DriverPool(tmp_path_factory.mktemp("hudi-drivers"))
    yield pool
    pool.close()
