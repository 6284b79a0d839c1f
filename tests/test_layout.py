"""The house's layout rules, checked on the source: the metadata database is reached only through `tms/db`
(no SQL, and no query built with SQLAlchemy, anywhere else), and the format library `tms/hudi` knows only
Hudi (it imports nothing of TMS outside itself), no import circle among the project's modules, and the dashboard
(`service/ui`) reaches the service's use cases through `service/actions`, never through the API's routes."""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator
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


def _module_level_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports that run when a module is imported: at module level, in its `if`/`try`/`with` blocks, but
    not inside a function or class body (they run later, when called) nor under `if TYPE_CHECKING:`."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            yield from _module_level_imports(node.body)
            yield from _module_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from _module_level_imports(block)
        elif isinstance(node, ast.With):
            yield from _module_level_imports(node.body)


def _import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the project's modules it imports at module level (`sources`: module name -> its text; a package
    is named as its __init__ is imported, `tms.db`). `from package import name` reaches the submodule when `name`
    is one, else the package; a module importing its own package (`from . import migrate`) is no edge: Python
    runs a package's __init__ before its modules anyway."""
    graph: dict[str, set[str]] = {}
    for module, text in sources.items():
        package = module if _is_package(module, sources) else module.rpartition(".")[0]
        found = set()
        for node in _module_level_imports(ast.parse(text).body):
            if isinstance(node, ast.Import):
                found |= {_nearest(alias.name, sources) for alias in node.names}
                continue
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parent, base] if base else parent)
            found |= {_nearest(f"{base}.{alias.name}", sources) for alias in node.names}
        graph[module] = {m for m in found if m and m != module and not module.startswith(f"{m}.")}
    return graph


def _is_package(module: str, sources: dict[str, str]) -> bool:
    return any(other.startswith(f"{module}.") for other in sources)


def _nearest(name: str, sources: dict[str, str]) -> str:
    """The project's module that `name` (a module, or a name in one) is found in; "" outside the project."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in sources:
            return ".".join(parts[:end])
    return ""


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every circle of the graph, as one path through it (module, ..., module), by its strongly connected
    components (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return [_path_through(sorted(c), graph) for c in components]


def _path_through(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A circle from the component's first module back to it (breadth first, inside the component)."""
    start, inside = component[0], set(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for target in sorted(graph[node] & inside):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if target not in came_from:
                    came_from[target] = node
                    nxt.append(target)
        frontier = nxt
    raise AssertionError(f"no circle through {component}")


def test_no_import_circle():
    """No module imports, at module level, a module that imports it back, directly or through others. Imports
    inside functions are not counted (they run when called, after every module is loaded), nor those under
    `if TYPE_CHECKING:`."""
    sources = {_package_name(p): p.read_text() for p in _modules(*PACKAGES)}
    circles = _circles(_import_graph(sources))
    assert not circles, "import circles: " + "; ".join(" -> ".join(c) for c in circles)


def _package_name(path: Path) -> str:
    name = _module_name(path)
    return name.removesuffix(".__init__")


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


# The ORM classes of tms/db/models.py are the database's rows: no row leaves tms/db (issue 39), the repositories
# hand out frozen records (tms/db/records.py) and change rows through named commands. Where else a module may
# import them, and why:
ROWS_ALLOWED = {
    "migrations/": "Alembic's environment reads the schema (Base.metadata) the migrations are compared with",
    "bench/": "a benchmark sets the state of thousands of tables in one statement (their digests, due times)",
    "tests/": "a test sets or reads a state no repository command offers on purpose (a backdated time, an "
              "expired lease, the scratch schema built)",
}


def _orm_classes() -> set[str]:
    """The names of tms/db/models.py's declarative base and of every class mapped on it."""
    tree = ast.parse((REPO / "tms/db/models.py").read_text())
    classes = {node.name: {b.id for b in node.bases if isinstance(b, ast.Name)}
               for node in tree.body if isinstance(node, ast.ClassDef)}
    return {"Base"} | {name for name, bases in classes.items() if "Base" in bases}


def _row_imports(tree: ast.AST, module: str, orm: set[str]) -> list[tuple[int, str]]:
    """(line, what) of every import of an ORM class (from tms.db or tms.db.models) or of tms.db.models itself."""
    found = []
    for source, name, line in _imports(tree, module):
        if source == "tms.db.models" or (source == "tms.db" and name == "models"):
            found.append((line, "tms.db.models" if name == "*" else f"{name} from tms.db.models"))
        elif source == "tms.db" and name in orm:
            found.append((line, f"{name} from tms.db"))
    return found


def _row_checked() -> list[Path]:
    paths = [p for p in REPO.rglob("*.py") if not any(part.startswith(".") for part in p.relative_to(REPO).parts)]
    return sorted(p for p in paths if not p.relative_to(REPO).as_posix().startswith(("tms/db/", *ROWS_ALLOWED)))


def test_no_database_row_leaves_tms_db():
    """No module outside tms/db imports an ORM class (they read records: tms/db/records.py), but those
    ROWS_ALLOWED names with their reason. The check finds such an import, however spelled."""
    orm = _orm_classes()
    assert {"Base", "RegisteredTable", "Task", "ResourceQueue", "Rollout"} <= orm and "Sighting" not in orm
    caught = "from tms.db import Task, TaskRepo\nfrom tms.db.models import Alert\nimport tms.db.models\n"
    assert [w for _, w in _row_imports(ast.parse(caught), "worker.x", orm)] == \
        ["Task from tms.db", "Alert from tms.db.models", "tms.db.models"]
    assert _row_imports(ast.parse("from ..models import Task\n"), "tms.db.repos.x", orm) == \
        [(1, "Task from tms.db.models")], "relative imports resolved"
    assert not _row_imports(ast.parse("from tms.db import TaskRecord, TaskRepo\n"), "worker.x", orm)
    found = [f"{path.relative_to(REPO)}:{line} imports {what}" for path in _row_checked()
             for line, what in _row_imports(ast.parse(path.read_text(), str(path)), _module_name(path), orm)]
    assert not found, "database rows outside tms/db (use the repositories' records):\n" + "\n".join(found)


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


def test_the_circle_check_finds_a_circle():
    """A circle through a package's __init__ and another package is found; a package importing its own
    modules, and a function's import, are not circles."""
    sources = {
        "tms.db": "from tms.planning.policy import TablePolicy\nfrom .startup import open_database\n",
        "tms.db.startup": "from . import migrate\nfrom ..config import Settings\n",
        "tms.db.migrate": "",
        "tms.config": "def f():\n    from tms.db import startup\n",
        "tms.planning": "",
        "tms.planning.policy": "from tms.backup.schedule import parse\n",
        "tms.backup": "",
        "tms.backup.schedule": "import tms.db\n",
    }
    graph = _import_graph(sources)
    assert graph["tms.db.startup"] == {"tms.db.migrate", "tms.config"}
    assert graph["tms.config"] == set()
    assert _circles(graph) == [["tms.backup.schedule", "tms.db", "tms.planning.policy", "tms.backup.schedule"]]
    sources["tms.backup.schedule"] = "if TYPE_CHECKING:\n    import tms.db\n"
    assert _circles(_import_graph(sources)) == []


def _routers_imported(tree: ast.AST, module: str) -> list[int]:
    """Lines of `module` that import the API's routes (`service.routers`), however spelled."""
    return [line for source, name, line in _imports(tree, module)
            if source == "service.routers" or source.startswith("service.routers.")
            or (source == "service" and name == "routers")]


def test_the_dashboard_does_not_call_the_api_routes():
    """The dashboard's pages (`service/ui`) change state through the actions (`service/actions`) and read through
    the views, as the API's routes do: never through a route's module. The check finds such an import."""
    assert _routers_imported(ast.parse("from ..routers.tables import update_table\n"), "service.ui.routes") == [1]
    assert _routers_imported(ast.parse("from service import routers\nimport service.routers.manager\n"),
                             "service.ui.x") == [1, 2]
    assert not _routers_imported(ast.parse("from ..actions.tables import change_table\n"), "service.ui.routes")
    found = [f"{path.relative_to(REPO)}:{line}" for path in _modules("service/ui")
             for line in _routers_imported(ast.parse(path.read_text(), str(path)), _module_name(path))]
    assert not found, f"the dashboard imports the API's routes (call service/actions instead): {', '.join(found)}"


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


_ENV_MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name) \
        and node.value.id == "os"


def _context_problems(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """(line, what) of each way settings could reach the format library other than as arguments: a write to this
    process's environment (outside the library), a call into the library as a module is imported (a hook), and,
    in the library, module state a caller sets (`global`) or an environment it reads."""
    in_library = module == "tms.hudi" or module.startswith("tms.hudi.")
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            if any(isinstance(t, ast.Subscript) and _is_environ(t.value) for t in targets) and not in_library:
                found.append((node.lineno, "writes os.environ"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not in_library:
            if (_is_environ(node.func.value) and node.func.attr in _ENV_MUTATORS) or (
                    isinstance(node.func.value, ast.Name) and node.func.value.id == "os"
                    and node.func.attr in ("putenv", "unsetenv")):
                found.append((node.lineno, "writes os.environ"))
        elif in_library and isinstance(node, ast.Global):
            found.append((node.lineno, f"keeps module state a caller sets ({', '.join(node.names)})"))
        elif in_library and (_is_environ(node) or (isinstance(node, ast.Attribute) and node.attr == "getenv")):
            found.append((node.lineno, "reads the environment"))
    library_names = set()  # the names the module imports from the library, as it calls them
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _imports(ast.Module([node], []), module)[0][0]
            if source == "tms.hudi" or source.startswith("tms.hudi."):
                library_names |= {alias.asname or alias.name for alias in node.names}
    for statement in getattr(tree, "body", []):  # module level: runs when the module is imported
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) and \
                isinstance(statement.value.func, ast.Name) and statement.value.func.id in library_names:
            found.append((statement.lineno, f"calls the format library's {statement.value.func.id} when imported"))
    return found


def test_settings_reach_the_format_library_only_as_arguments():
    """Storage options and the LOCAL timeline zone are passed to the library (its HudiContext), never through the
    environment, import hooks or module globals: the environment only hands settings to child processes."""
    problems = [f"{path.relative_to(REPO)}:{line} {what}" for path in _modules(*PACKAGES)
                for line, what in _context_problems(ast.parse(path.read_text(), str(path)), _module_name(path))]
    assert problems == []
    # a check that cannot fail checks nothing: each way is found, and a copy of the environment is not one
    hook = ("import os\nfrom tms.hudi.timeline.zone import use_local_zone\nos.environ['TMS_X'] = 'y'\n"
            "os.environ.setdefault('TMS_Y', 'z')\nuse_local_zone(print)\nenv = dict(os.environ)\nenv['TMS_X'] = 'y'\n"
            "from .hudi.storage.table_storage import use_storage_options as _use\n_use(print)\n")
    assert [what for _, what in _context_problems(ast.parse(hook), "tms.config")] == \
        ["writes os.environ", "writes os.environ", "calls the format library's use_local_zone when imported",
         "calls the format library's _use when imported"]
    state = "import os\n_source = None\ndef use(s):\n    global _source\n    _source = os.environ.get('TZ')\n"
    assert [what for _, what in _context_problems(ast.parse(state), "tms.hudi.timeline.zone")] == \
        ["keeps module state a caller sets (_source)", "reads the environment"]
