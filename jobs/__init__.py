"""TMS jobs role (see DESIGN.md)."""
import sys

# httpx imports its command-line client (click, rich, pygments: a sixth of a second) unless that import fails; a job
# is a process of its own, started for each task, and never runs httpx's command line.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
