"""deploy/Dockerfile, .dockerignore and the install extras, read from the files (no Docker engine here):
a Python base image TMS supports, Java 17 where spark-submit runs, every package of the project copied and
installed with the object-store extras, an unprivileged user, and a build context without local state."""
from __future__ import annotations

import fnmatch
import re
import subprocess

import pytest
from deploy_support import (
    REPO,
    compose_services,
    dockerfile_args,
    dockerfile_instructions,
    dockerfile_stages,
    pyproject,
)
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

OBJECT_STORE_EXTRAS = {"s3": "s3", "gcs": "gs", "azure": "abfs"}  # extra -> an fsspec protocol it serves


def _final(stage: str, instruction: str) -> str | None:
    values = [a for i, a in dockerfile_stages()[stage] if i == instruction]
    return values[-1] if values else None


def _copies(stage: str) -> list[tuple[list[str], str]]:
    out = []
    for instruction, args in dockerfile_stages()[stage]:
        if instruction == "COPY" and "--from" not in args:
            words = [w for w in args.split() if not w.startswith("--")]
            out.append((words[:-1], words[-1]))
    return out


def test_the_stages_the_deployments_build_exist():
    stages = dockerfile_stages()
    targets = {s["build"]["target"] for s in compose_services().values() if "build" in s}
    assert targets <= set(stages), f"compose builds {targets - set(stages)}, which the Dockerfile lacks"
    assert {"tms", "tms-spark"} <= set(stages)


def test_the_base_image_is_a_python_tms_supports():
    base = dockerfile_stages()["tms"][0][1].split()[0]
    base = re.sub(r"\$\{(\w+)\}", lambda m: dockerfile_args()[m.group(1)], base)
    match = re.fullmatch(r"python:(\d+\.\d+)[\w.-]*", base)
    assert match, f"{base} is not an official Python image"
    assert match.group(1) in SpecifierSet(pyproject()["project"]["requires-python"])
    # Debian bookworm still has openjdk-17 (trixie has not): the spark stage installs it from there.
    assert "bookworm" in base


def test_java_17_where_spark_runs():
    installs = " ".join(a for i, a in dockerfile_stages()["tms-spark"] if i == "RUN")
    assert re.search(r"\bopenjdk-17-jre(-headless)?\b", installs)
    assert "openjdk" not in " ".join(a for i, a in dockerfile_stages()["tms"] if i == "RUN"), \
        "the service image needs no Java"
    env = " ".join(a for i, a in dockerfile_stages()["tms-spark"] if i == "ENV")
    assert "SPARK_HOME=" in env and "PATH=" in env, "spark-class and spark-submit must be on PATH"


@pytest.mark.parametrize("stage", ["tms", "tms-spark"])
def test_runs_as_an_unprivileged_user(stage):
    user = _final(stage, "USER")
    assert user and user.split(":")[0] not in ("root", "0"), f"{stage} runs as root"
    assert user.isdigit(), "a numeric user lets Kubernetes check runAsNonRoot"


@pytest.mark.parametrize("stage", ["tms", "tms-spark"])
def test_entry_point_dispatches_under_tini(stage):
    entrypoint = _final(stage, "ENTRYPOINT")
    assert entrypoint == '["tini", "--", "tms-entrypoint"]'
    copied = {dest: sources for sources, dest in _copies(stage)}
    for script in ("tms-entrypoint", "tms-healthcheck", "tms-put-queue"):
        sources = copied[f"/usr/local/bin/{script}"]
        assert all((REPO / s).is_file() and (REPO / s).stat().st_mode & 0o111 for s in sources), script


def test_every_package_of_the_project_is_copied():
    """`tms` imports every role's commands at start: an image without planner/ or standalone/ cannot run
    `tms` at all. Copy every package pyproject.toml installs, the migrations, and what pip reads."""
    copied = {s.rstrip("/") for sources, _ in _copies("tms") for s in sources}
    includes = pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {p.rstrip("*") for p in includes}
    packages = {p for p in packages if (REPO / p / "__init__.py").is_file()}
    assert packages, includes
    required = packages | {"migrations", "pyproject.toml", pyproject()["project"]["readme"]}
    assert required <= copied, f"not copied: {sorted(required - copied)}"


def test_installed_from_the_lock_with_the_object_store_extras(tmp_path):
    """The image installs uv.lock's versions with their hashes: pyproject.toml's dependencies and the
    object-store extras, and nothing of the test extra. The Dockerfile's own command, run here on the real
    pyproject.toml and uv.lock (with this checkout's uv)."""
    import shutil
    import sys

    extras = dockerfile_args()["TMS_EXTRAS"]
    assert extras == "object-stores"
    run = next(a for i, a in dockerfile_instructions() if i == "RUN" and "uv export" in a)
    assert "--require-hashes" in run and "uv-requirements.txt" in run
    export = run[run.index("uv export"):run.index("-o /tmp/requirements.txt")]
    uv = REPO / ".tools" / "uv" / "bin" / "uv"
    uv_bin = str(uv) if uv.is_file() else shutil.which("uv")
    assert uv_bin, "uv is installed by ./dev"
    for name in ("pyproject.toml", "uv.lock", "README.md"):
        shutil.copy(REPO / name, tmp_path / name)
    command = export.replace("uv export", f"'{uv_bin}' export").replace("${TMS_EXTRAS}", extras)
    env = {"PATH": "/usr/bin:/bin", "UV_PYTHON": sys.executable, "UV_PYTHON_DOWNLOADS": "never"}
    out = subprocess.run(["sh", "-c", command + " -o requirements.txt"], cwd=tmp_path, check=True, env=env)
    assert out.returncode == 0
    text = (tmp_path / "requirements.txt").read_text()
    listed = {Requirement(line.split(" \\")[0].split(";")[0]).name.lower()
              for line in text.splitlines() if line and not line.startswith((" ", "#"))}
    assert text.count("--hash=sha256:") >= len(listed), "every pinned package carries its hashes"
    project = pyproject()["project"]
    wanted = {Requirement(r).name.lower() for r in project["dependencies"] + project["optional-dependencies"][extras]}
    assert wanted <= listed, f"not installed: {sorted(wanted - listed)}"
    assert {"s3fs", "gcsfs", "adlfs", "pyspark"} <= listed
    assert not {"pytest", "mypy", "ruff"} & listed, "the test extra is not in the image"
    assert any(i == "RUN" and "pip install --no-deps -e ." in a for i, a in dockerfile_stages()["tms"])


@pytest.mark.parametrize("extra, protocol", OBJECT_STORE_EXTRAS.items())
def test_object_store_extras_install_fsspecs_backend(extra, protocol):
    """`pip install tms[s3]` (gcs, azure) installs the package fsspec loads for that URL scheme."""
    from fsspec.registry import known_implementations

    extras = pyproject()["project"]["optional-dependencies"]
    backend = known_implementations[protocol]["class"].split(".")[0]
    assert backend in {Requirement(r).name for r in extras[extra]}
    assert backend in {Requirement(r).name for r in extras["object-stores"]}


def test_the_object_stores_extra_is_exactly_the_three():
    extras = pyproject()["project"]["optional-dependencies"]
    union = {Requirement(r).name for e in OBJECT_STORE_EXTRAS for r in extras[e]}
    assert {Requirement(r).name for r in extras["object-stores"]} == union == {"s3fs", "gcsfs", "adlfs"}


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's .dockerignore rule: the last matching pattern wins; ! re-includes; a match on a parent folder
    excludes what is under it."""
    ignored = False
    parts = path.split("/")
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern[1:] if negate else pattern
        pattern = pattern.strip("/")
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            if fnmatch.fnmatch(prefix, pattern) or (pattern.startswith("**/") and fnmatch.fnmatch(
                    parts[i - 1], pattern[3:])):
                ignored = not negate
                break
    return ignored


def _dockerignore() -> list[str]:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_dockerignore_leaves_out_local_state_and_keeps_what_the_image_copies():
    patterns = _dockerignore()
    for local in (".git", ".venv", ".tms", "tms/__pycache__/x.pyc", "tests/conftest.py", ".env"):
        assert _ignored(local, patterns), f"{local} would be sent to the build"
    for stage in ("tms", "tms-spark"):
        for sources, _ in _copies(stage):
            for source in sources:
                assert not _ignored(source, patterns), f".dockerignore excludes {source}, which the image copies"
                for file in (REPO / source).rglob("*.py") if (REPO / source).is_dir() else []:
                    if "__pycache__" not in file.parts:
                        rel = file.relative_to(REPO).as_posix()
                        assert not _ignored(rel, patterns), f".dockerignore excludes {rel}"


def test_dockerignore_check_catches_an_excluded_source():
    assert _ignored("planner/process.py", _dockerignore() + ["planner"])
    assert not _ignored("planner/process.py", _dockerignore() + ["planner", "!planner"])
    assert _ignored("jobs/__pycache__/run.cpython-311.pyc", _dockerignore())


_IMAGE_PYTHON = """
import json, sys
# The test environment's editable install of this checkout is hidden: only the image's tree is importable.
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path.insert(0, sys.argv[1])
import typer.main
import tms, tms.cli
from tms.db import migrate
assert tms.__file__.startswith(sys.argv[1]), tms.__file__
print(json.dumps({"commands": sorted(typer.main.get_command(tms.cli.app).commands),
                  "migrations": migrate.MIGRATIONS_DIR.is_dir() and migrate.head_revision() is not None}))
"""


def test_the_copied_tree_runs_tms(tmp_path):
    """What the Dockerfile copies into /opt/tms, copied the same way here: `tms` starts from it with every
    command and finds its migrations (a package missing from the COPY lines would fail the import)."""
    import json
    import shutil
    import sys

    from deploy_support import tms_commands

    tree = tmp_path / "opt" / "tms"
    tree.mkdir(parents=True)
    for sources, dest in _copies("tms"):
        if dest.startswith("/"):
            continue  # the scripts copied to /usr/local/bin
        for source in sources:
            target = tree / (dest if dest not in ("./", ".") else source)
            if (REPO / source).is_dir():
                shutil.copytree(REPO / source, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(REPO / source, target)
    result = subprocess.run([sys.executable, "-c", _IMAGE_PYTHON, str(tree)], cwd=tree, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(loaded["commands"]) == set(tms_commands()) and loaded["migrations"]
