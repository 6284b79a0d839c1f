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
