"""Helpers shared by the tests: the fixture tables, hudi-rs as the reference reader, row comparison."""
from __future__ import annotations

import base64
import datetime as dt
import decimal
import os
import shutil
import socket
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
# CI runs four lanes of tests at once on two cores: a wait there is given three times as long (a wait ends as
# soon as its condition holds, so only a failing test takes longer).
TIMEOUT_SCALE = 3 if os.environ.get("CI") else 1
FIXTURES = Path(os.environ.get("TMS_HUDI_FIXTURES", REPO.parent / "shared" / "fixtures" / "hudi"))

# zip name -> the table's folder once unzipped (the zip's one top folder, renamed where two zips share it)
FIXTURE_TABLES = {
    "cow_v6_nonpartitioned": "v6_nonpartitioned",
    "cow_v6_simplekeygen_nonhivestyle_overwritetable": "v6_simplekeygen_nonhivestyle_overwritetable",
    "cow_v8_nonpartitioned": "v8_nonpartitioned",
    "mor_v6_nonpartitioned_rollback": "v6_nonpartitioned_rollback",
    "mor_v6_trips_8i1u": "v6_trips_8i1u",
    "mor_v8_trips_8i3u1d": "v8_trips_8i3u1d",
    "cow_v9_txns_simple_meta": "v9_txns_simple_meta_cow",
    "mor_v9_txns_simple_meta": "v9_txns_simple_meta_mor",
    "mor_v9_txns_simple_nometa": "v9_txns_simple_nometa",
    "cow_v6_timebasedkeygen_nonhivestyle": "v6_timebasedkeygen_nonhivestyle",
    "cow_v9_lance_nonpartitioned": "v9_lance_nonpartitioned",
    "cow_v6_simplekeygen_hivestyle_no_metafields": "v6_simplekeygen_hivestyle_no_metafields",
}


def unzip_fixture(name: str, dest: Path) -> Path:
    """Unzip fixture `name` (a key of FIXTURE_TABLES) under `dest`; returns the table's base path."""
    archive = FIXTURES / f"{name}.zip"
    if not archive.exists():
        raise FileNotFoundError(f"fixture {archive} not found (set TMS_HUDI_FIXTURES to the fixtures folder)")
    staging = dest / f".unzip-{name}"
    with zipfile.ZipFile(archive) as zf:
        for member in zf.namelist():
            if not member.startswith("__MACOSX"):
                zf.extract(member, staging)
    (top,) = [p for p in staging.iterdir() if p.is_dir()]
    target = dest / FIXTURE_TABLES[name]
    top.rename(target)
    staging.rmdir()
    return target


def copy_table(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def hudi_rs_table(path: Path | str, as_of: str | None = None, start: str | None = None) -> pa.Table:
    """The snapshot hudi-rs 0.5.0 reads; with `start`, its incremental read of what changed after `start`."""
    from hudi import HudiQueryType, HudiReadOptions, HudiTableBuilder
    table = HudiTableBuilder.from_base_uri(str(path)).build()
    options = HudiReadOptions().with_as_of_timestamp(as_of) if as_of else None
    if start is not None:
        options = HudiReadOptions().with_query_type(HudiQueryType.Incremental).with_start_timestamp(start)
    batches = table.read(options)
    if not batches:
        return pa.table({})
    return pa.Table.from_batches(batches)


def _norm(v):
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):  # arrow map -> pairs
            return {str(k): _norm(x) for k, x in v}
        return [_norm(x) for x in v]
    if isinstance(v, decimal.Decimal):
        return str(v.normalize())
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode()
    if isinstance(v, dt.datetime):
        return v.replace(tzinfo=None).isoformat()
    if isinstance(v, (dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, float):
        return round(v, 9)
    return v


def rows(table: pa.Table, columns: list[str] | None = None) -> list[dict]:
    """Rows as comparable dicts, sorted by record key (then partition path)."""
    if table.num_columns == 0:
        return []
    if columns is not None:
        table = table.select([c for c in columns if c in table.column_names])
    out = [{k: _norm(v) for k, v in r.items()} for r in table.to_pylist()]
    return sorted(out, key=lambda r: (str(r.get("_hoodie_record_key")), str(r.get("_hoodie_partition_path")),
                                      repr(sorted(r.items()))))


@contextmanager
def served(app: Any) -> Iterator[str]:
    """The ASGI app served by uvicorn in a thread on a free loopback port; yields its base URL."""
    import threading
    import time

    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the service did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
