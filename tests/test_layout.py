"""The house's layout rules, checked on the source: the metadata database is reached only through `tms/db`
(no SQL, and no query built with SQLAlchemy, anywhere else), and the format library `tms/hudi` knows only
Hudi (it imports nothing of TMS outside itself)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("tms", "service", "planner", "worker", "manager", "jobs", "standalone")
# What a module outside tms/db may take from SQLAlchemy: the session type it is handed, and the exceptions a
# role tells apart (a database that is down). Nothing that builds a query.
ALLOWED_SQLALCHEMY = {("sqlalchemy.orm", "Session"), ("sqlalchemy.exc", "*")}
SQL = re.compile(r"^\s*(SELECT\s.+\sFROM\s|INSERT\s+INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|CREATE\s+TABLE\s|"
                 r"ALTER\s+TABLE\s|SET\s+LOCAL\s)", re.DOTALL)  # SQL as the code writes it: in capitals


def _modules(*packages: str) -> list[Path]:
    return sorted(p for package in packages for p in (REPO / package).rglob("*.py"))


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def _imports(tree: ast.AST, module: str) -> list[tuple[str, str, int]]:
    """(module imported from, name, line) of every import, relative ones resolved."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, "*", node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module.split(".")[: -node.level]  # a package's __init__ counts as one of its modules
                base = ".".join([*parent, base] if base else parent)
            out += [(base, alias.name, node.lineno) for alias in node.names]
    return out


def _outside_db() -> list[Path]:
    return [p for p in _modules(*PACKAGES) if not p.relative_to(REPO).as_posix().startswith("tms/db/")]


@pytest.mark.parametrize("path", _outside_db(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_query_outside_tms_db(path: Path):
    tree = ast.parse(path.read_text(), str(path))
    for source, name, line in _imports(tree, _module_name(path)):
        if source == "sqlalchemy" or source.startswith("sqlalchemy."):
            assert (source, name) in ALLOWED_SQLALCHEMY or (source, "*") in ALLOWED_SQLALCHEMY, \
                f"{path.relative_to(REPO)}:{line} imports {name} from {source}: queries live in tms/db"
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.match(node.value):
            raise AssertionError(f"{path.relative_to(REPO)}:{node.lineno} holds SQL text: it belongs in tms/db")


def _outside_the_library(source: str) -> bool:
    """Whether an import from `source` reaches TMS outside its format library `tms.hudi`."""
    return (source == "tms" or source.startswith("tms.")) and not (source == "tms.hudi"
                                                                    or source.startswith("tms.hudi."))


@pytest.mark.parametrize("path", _modules("tms/hudi"), ids=lambda p: p.relative_to(REPO).as_posix())
def test_the_format_library_imports_nothing_of_tms(path: Path):
    tree = ast.parse(path.read_text(), str(path))
    for source, name, line in _imports(tree, _module_name(path)):
        assert not _outside_the_library(source), \
            f"{path.relative_to(REPO)}:{line} imports {name} from {source}: tms/hudi knows only Hudi"


def test_the_checks_find_what_they_look_for():
    """The rules catch a query and SQL text (a check that cannot fail checks nothing)."""
    tree = ast.parse("from sqlalchemy import select\nQ = 'SELECT id FROM tasks'\n")
    assert [(s, n) for s, n, _ in _imports(tree, "manager.x")] == [("sqlalchemy", "select")]
    assert ("sqlalchemy", "select") not in ALLOWED_SQLALCHEMY
    assert SQL.match("SELECT id FROM tasks") and SQL.match("UPDATE tables SET x = 1")
    assert not SQL.match("select the table to plan from the list")
    assert [s for s, _, _ in _imports(ast.parse("from ..errors import X\n"), "tms.hudi.locks.config")] == \
        ["tms.hudi.errors"]
    # the library's rule: TMS outside tms/hudi is found, absolutely or relatively imported; the library is not
    outside = "from tms.errors import TMSError\nfrom ...table_service import TableService\nimport tms.config\n"
    found = [s for s, _, _ in _imports(ast.parse(outside), "tms.hudi.metadata.writer") if _outside_the_library(s)]
    assert found == ["tms.errors", "tms.table_service", "tms.config"]
    inside = "from tms.hudi.errors import HudiError\nfrom ..table import HudiTable\nfrom . import keys\nimport tmsx\n"
    assert not [s for s, _, _ in _imports(ast.parse(inside), "tms.hudi.metadata.writer") if _outside_the_library(s)]


def _raw_hoodie_reads(tree: ast.AST) -> list[int]:
    """Lines that read a `hoodie.*` option by its key (`x.get("hoodie....")`) instead of through its typed option."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
            and node.args[0].value.startswith("hoodie.")]


def test_hoodie_options_are_read_through_their_typed_options():
    """Every `hoodie.*` option is read through its one definition in `tms/hudi/config` (key, default, aliases,
    parser), never by a raw `.get("hoodie....")`; the check finds such a read."""
    assert _raw_hoodie_reads(ast.parse('fmt = props.get("hoodie.table.base.file.format") or "PARQUET"\n')) == [1]
    assert not _raw_hoodie_reads(ast.parse('fmt = BASE_FILE_FORMAT.value(props)\nx = d.get("tms.ttl.days")\n'))
    typed = "tms/hudi/config/"
    found = [f"{path.relative_to(REPO)}:{line}" for path in _modules(*PACKAGES)
             if not path.relative_to(REPO).as_posix().startswith(typed)
             for line in _raw_hoodie_reads(ast.parse(path.read_text(), str(path)))]
    assert not found, f"raw hoodie.* option reads (read them through tms/hudi/config): {', '.join(found)}"
