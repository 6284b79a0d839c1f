"""The shared fixtures that carry a metadata table, unzipped once per session."""
from __future__ import annotations

import zipfile
from pathlib import Path

from support import FIXTURES

# zip name -> table folder inside it
MDT_FIXTURES = {
    "mor_v8_trips_8i3u1d": "v8_trips_8i3u1d",
    "cow_v9_txns_simple_meta": "v9_txns_simple_meta",
    "mor_v9_txns_simple_meta": "v9_txns_simple_meta",
    "cow_v9_lance_nonpartitioned": "v9_lance_nonpartitioned",
}


def unzip_mdt_fixture(name: str, dest: Path) -> Path:
    """Unzip fixture `name` under `dest / name`; returns the table's base path."""
    archive = FIXTURES / f"{name}.zip"
    if not archive.exists():
        raise FileNotFoundError(f"fixture {archive} not found (set TMS_HUDI_FIXTURES to the fixtures folder)")
    out = dest / name
    with zipfile.ZipFile(archive) as zf:
        for member in zf.namelist():
            if not member.startswith("__MACOSX"):
                zf.extract(member, out)
    return out / MDT_FIXTURES[name]
