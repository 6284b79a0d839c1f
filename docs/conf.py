"""Sphinx configuration of the TMS documentation site (Markdown sources through MyST, the Furo theme).

Built offline: no intersphinx, no remote assets. `tests/docs/test_docs_build.py` builds it with warnings as
errors. The configuration and API references are generated at build time by `_ext/tms_reference.py`."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
sys.path[:0] = [str(REPO), str(DOCS / "_ext")]  # the project's packages, and the extension below

project = "TMS"
author = "The TMS authors"
copyright = "The TMS authors"

extensions = ["myst_parser", "tms_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]

# Headings up to ### get anchors, so pages link to sections as [text](page.md#anchor).
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

html_theme = "furo"
html_title = "TMS"
html_static_path: list[str] = []
html_show_sourcelink = False

nitpicky = True

# Building the API reference imports the service, whose migrations module logs at INFO: not the build's business.
logging.getLogger("alembic").setLevel(logging.WARNING)
