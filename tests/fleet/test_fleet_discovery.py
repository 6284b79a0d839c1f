"""Finding tables under a root: folders holding .hoodie are tables (not descended into), hidden folders are
skipped, the depth is bounded, and known tables are not listed again."""
from __future__ import annotations

from tms.fleet.discovery import find_tables


def _table(path) -> None:
    (path / ".hoodie").mkdir(parents=True)
    (path / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=t\n")


def test_tables_at_every_depth_but_not_inside_tables_nor_hidden_folders(tmp_path):
    for rel in ("a", "b/c", "b/d/e", "f/g/h/i/j"):
        _table(tmp_path / rel)
    _table(tmp_path / "a" / "nested")  # inside a table: a partition folder, never a table of its own
    _table(tmp_path / ".trash" / "old")
    _table(tmp_path / "_temporary" / "x")
    (tmp_path / "empty" / "folder").mkdir(parents=True)
    found = find_tables(str(tmp_path), max_depth=3)
    assert sorted(found.tables) == [str(tmp_path / r) for r in ("a", "b/c", "b/d/e")]  # f/g/h/i/j is too deep
    assert sorted(find_tables(str(tmp_path), max_depth=5).tables)[-1] == str(tmp_path / "f/g/h/i/j")


def test_a_root_that_is_a_table_and_known_tables_skip_their_listing(tmp_path):
    _table(tmp_path / "t")
    assert find_tables(str(tmp_path / "t")).tables == [str(tmp_path / "t")]
    for n in range(5):
        _table(tmp_path / "lake" / f"t{n}")
    first = find_tables(str(tmp_path / "lake"))
    assert first.listings == 6  # the root and each table's folder
    known = find_tables(str(tmp_path / "lake"), known=first.tables)
    assert sorted(known.tables) == sorted(first.tables) and known.listings == 1
