"""Fixtures of the `tms up` tests."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def data_dir():
    """A fresh data directory for `tms up`, outside pytest's temporary folder: run as root, the embedded
    PostgreSQL runs as another user, who must reach it, and pytest makes its own folder private (0700) at
    the start of every session, including other sessions running at the same time."""
    folder = Path(tempfile.mkdtemp(prefix="tms-up-test-"))
    folder.chmod(0o755)
    yield folder / "data"
    shutil.rmtree(folder, ignore_errors=True)
