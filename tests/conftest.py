import pytest

from support import FIXTURE_TABLES, unzip_fixture


@pytest.fixture(scope="session")
def fixture_tables(tmp_path_factory):
    """All fixture tables unzipped once per session (read-only: copy before changing one)."""
    root = tmp_path_factory.mktemp("fixtures")
    return {name: unzip_fixture(name, root) for name in FIXTURE_TABLES}
