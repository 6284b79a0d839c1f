import pytest
from support import FIXTURE_TABLES, unzip_fixture


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

    from tms.db import Base
    names = ", ".join(t.name for t in Base.metadata.sorted_tables)
    with scratch_db.transaction() as session:
        session.execute(text(f"TRUNCATE {names} CASCADE"))
    return scratch_db
