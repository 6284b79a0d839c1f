"""The shared fixtures that carry a metadata table; tables with a metadata table
(MDT), written by the writer with their model, and the checks every test of a
service on them makes: hudi-rs reads the model's rows, `tms verify` finds nothing, and the table without its
metadata table reads the same."""
from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

from support import FIXTURES, hudi_rs_table, rows
from table_model import COLUMNS, ModelledTable

from tms.hudi.metadata.init import create_metadata_table
from tms.hudi.metadata.listing import committed_files
from tms.hudi.metadata.reader import MetadataTable
from tms.hudi.table.hudi_table import HudiTable
from tms.hudi.table.properties import format_properties

MDT_PARTITIONS = ["files", "column_stats", "record_index"]

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


class MdtModelledTable(ModelledTable):
    def __init__(self, path, table_type: str = "MERGE_ON_READ", version: int = 8,
                 partitions: list[str] | None = None, **kwargs):
        super().__init__(path, table_type, version, **kwargs)
        create_metadata_table(self.writer.table, partitions or MDT_PARTITIONS)

    def check(self, *, hudi_rs: bool = True) -> None:
        super().check(hudi_rs=hudi_rs)
        check_metadata_table(Path(self.path), self.model.expected())


def without_metadata_table(path: Path, dest: Path) -> Path:
    """A copy of the table with its metadata table removed (and no longer listed in hoodie.properties)."""
    copy = Path(shutil.copytree(path, dest))
    shutil.rmtree(copy / ".hoodie" / "metadata")
    table = HudiTable.load(str(copy))
    props = {k: v for k, v in table.config.props.items() if not k.startswith("hoodie.table.metadata.partitions")}
    (copy / ".hoodie" / "hoodie.properties").write_text(format_properties(props))
    return copy


def check_metadata_table(path: Path, expected: list[dict] | None = None) -> None:
    """The MDT lists what storage and the timeline hold, `tms verify` is clean, and hudi-rs reads the same
    rows with and without the MDT (and the model's, if given)."""
    from tms.hudi.table.verify import verify_table
    table = HudiTable.load(str(path))
    names = lambda listing: {p: sorted(files) for p, files in listing.items()}  # noqa: E731 (log sizes grow)
    assert names(MetadataTable(table).file_listing()) == names(committed_files(table))
    problems = verify_table(table)
    assert problems == [], problems
    with_mdt = rows(hudi_rs_table(path), COLUMNS)
    bare = without_metadata_table(path, path.parent / (path.name + "-no-mdt"))
    try:
        assert rows(hudi_rs_table(bare), COLUMNS) == with_mdt
    finally:
        shutil.rmtree(bare)
    if expected is not None:
        assert with_mdt == expected
