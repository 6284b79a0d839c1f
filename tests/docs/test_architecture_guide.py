"""The guide for the next engineer (docs/architecture.md) points only at paths that exist."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GUIDE = "## A guide for the next engineer"
# A path as the guide names it, in backquotes: a folder or a file under one of the repository's top-level folders
PATH = re.compile(r"`((?:tms|service|planner|worker|manager|jobs|standalone|docs|tests|migrations|deploy|bench)"
                  r"/[\w./-]*|pyproject\.toml)`")


def _guide() -> str:
    text = (REPO / "docs" / "architecture.md").read_text()
    assert GUIDE in text, "docs/architecture.md has no guide for the next engineer"
    return text.split(GUIDE, 1)[1].split("\n## ", 1)[0]


def test_every_path_the_guide_names_exists():
    named = PATH.findall(_guide())
    assert len(named) > 30, named  # the guide names its pointers as paths (a pattern that found none checks nothing)
    missing = sorted({p for p in named if not (REPO / p).exists()})
    assert not missing, f"docs/architecture.md's guide names paths that do not exist: {missing}"


def test_the_check_finds_a_missing_path():
    assert PATH.findall("see `tms/planning/gone.py` and `service/ui/templates/`, not `hoodie.x`") == \
        ["tms/planning/gone.py", "service/ui/templates/"]
    assert not (REPO / "tms/planning/gone.py").exists()
