"""The documentation site (docs/) builds offline with warnings as errors, its references cover every setting and
route, and the README's links lead to files that exist."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
# Markdown links and images: [text](target) / ![alt](target), the target up to a space or ')'.
MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)[^)]*\)")
# What a browser would fetch on opening a page: scripts, stylesheets, images, fonts from elsewhere.
REMOTE_ASSET = re.compile(r"<(?:script|img|iframe)[^>]*\ssrc=\"(?:https?:)?//|<link[^>]*\shref=\"(?:https?:)?//"
                          r"|url\(\s*['\"]?(?:https?:)?//", re.IGNORECASE)


def sphinx_build(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """sphinx-build with warnings as errors; a request it tried to send anywhere would go to a dead proxy and
    fail (the site must build offline)."""
    dead_proxy = "http://127.0.0.1:9"
    env = {**os.environ, "HTTP_PROXY": dead_proxy, "HTTPS_PROXY": dead_proxy, "ALL_PROXY": dead_proxy,
           "http_proxy": dead_proxy, "https_proxy": dead_proxy, "all_proxy": dead_proxy, "NO_PROXY": "",
           "no_proxy": ""}
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(source),
                           str(out)], cwd=REPO, capture_output=True, text=True, env=env)


# Building the site imports the service to take its OpenAPI document: most of a minute on a busy machine.
@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("docs-html")
    built = sphinx_build(DOCS, out)
    assert built.returncode == 0, f"sphinx-build failed:\n{built.stderr}"
    return out


def page_text(path: Path) -> str:
    """A built page's text, its tags removed and its white space collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8")).split())


@pytest.mark.slow
def test_the_site_builds_with_every_setting_in_the_configuration_reference(site):
    from tms.config import Settings

    reference = page_text(site / "reference" / "configuration.html")
    missing = [name for name in Settings.model_fields if f"TMS_{name.upper()}" not in reference]
    assert not missing, f"settings missing from the configuration reference: {missing}"
    assert "tms.toml" in reference and "TMS_CONFIG_FILE" in reference


@pytest.mark.slow
def test_the_api_reference_is_the_services_openapi_document(site):
    reference = page_text(site / "reference" / "api.html")
    for route in ("POST /api/v1/hudi/callback", "POST /api/v1/events", "GET /api/v1/tables/{table_id}",
                  "POST /api/v1/tasks/{task_id}:rerun", "PUT /api/v1/queues/{name}", "GET /healthz"):
        assert route in reference, route
    # Schemas are listed with their fields, and operations link to them.
    assert "TableRegistration" in reference and "base_path" in reference
    assert 'href="#api-schema-tableregistration"' in (site / "reference" / "api.html").read_text()


@pytest.mark.slow
def test_no_page_loads_anything_from_elsewhere(site):
    pages = [p for p in site.rglob("*") if p.suffix in (".html", ".css", ".js") and p.is_file()]
    assert len(pages) > 10
    remote = [str(p.relative_to(site)) for p in pages if REMOTE_ASSET.search(p.read_text(errors="replace"))]
    assert not remote, f"pages that fetch from the network: {remote}"
    assert (site / "_images" / "data-flow.svg").is_file()


def test_a_broken_link_or_a_page_outside_the_toctree_fails_the_build(tmp_path):
    """The same configuration on a tiny site: what -W turns into a failure, with Sphinx's message."""
    source = tmp_path / "src"
    source.mkdir()
    shutil.copy(DOCS / "conf.py", source / "conf.py")
    shutil.copytree(DOCS / "_ext", source / "_ext")
    (source / "index.md").write_text("# Home\n\n```{toctree}\na\n```\n")
    (source / "a.md").write_text("# A\n\n## Part\n\n[gone](missing.md), [no such part](a.md#nowhere), "
                                 "[fine](#part)\n")
    (source / "orphan.md").write_text("# Not in any toctree\n")
    built = sphinx_build(source, tmp_path / "out")
    assert built.returncode != 0
    assert "missing.md" in built.stderr
    assert "nowhere" in built.stderr
    assert "orphan" in built.stderr and "toctree" in built.stderr
    assert "#part" not in built.stderr


def test_a_setting_without_a_description_fails_the_build(monkeypatch):
    from pydantic import Field
    from sphinx.errors import ExtensionError

    import tms.config

    monkeypatch.syspath_prepend(str(DOCS / "_ext"))
    import tms_reference

    class Undocumented(tms.config.Settings):
        undocumented_seconds: float = Field(1.0)

    assert "TMS_UNDOCUMENTED_SECONDS" not in tms_reference.settings_markdown()
    monkeypatch.setattr(tms.config, "Settings", Undocumented)
    with pytest.raises(ExtensionError, match="TMS_UNDOCUMENTED_SECONDS"):
        tms_reference.settings_markdown()


def test_every_link_of_the_readme_leads_to_a_file_of_the_repository():
    readme = (REPO / "README.md").read_text()
    targets = [t for t in MARKDOWN_LINK.findall(readme) if not re.match(r"[a-z]+:|#", t)]
    assert len(targets) >= 10, targets  # the README is mostly links into docs/
    broken = []
    for target in targets:
        path = (REPO / target.split("#")[0]).resolve()
        if not path.is_relative_to(REPO) or not path.exists():
            broken.append(target)
    assert not broken, f"README.md links to files that do not exist in the repository: {broken}"
    assert "docs/images/dashboard.png" in targets


def test_the_readme_starts_with_the_two_commands():
    """`.ci/run` runs the README's test command; a newcomer reads these first."""
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.DOTALL)
    assert [b.strip() for b in blocks[:2]] == ["./dev run", "./dev test"]
