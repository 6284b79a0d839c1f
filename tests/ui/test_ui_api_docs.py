"""`/docs` (Swagger UI) and `/redoc` in headless Chromium with every request off the machine aborted: the
pages load their assets from the service and show the API's operations."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.slow


def _operations(stack) -> list[tuple[str, str, str]]:
    spec = stack.api("GET", "/openapi.json").json()
    return [(method.upper(), path, op.get("summary", "")) for path, ops in spec["paths"].items()
            for method, op in ops.items()]


def test_swagger_ui_shows_every_operation_offline(stack, browsing):
    operations = _operations(stack)
    assert len(operations) > 20
    page = browsing.page()
    page.goto(stack.url + "/docs")
    blocks = page.locator(".opblock")
    expect(blocks).to_have_count(len(operations), timeout=30_000)
    expect(page.locator(".opblock-summary-path", has_text="/api/v1/tables/{table_id}").first).to_be_visible()
    expect(page.get_by_text("Run a failed or cancelled task again")).to_be_visible()
    browsing.shot(page, "docs", full_page=False)
    assert browsing.blocked == [], browsing.blocked


def test_redoc_shows_the_operations_offline(stack, browsing):
    page = browsing.page()
    page.goto(stack.url + "/redoc")
    expect(page.get_by_role("heading", name="Register a table by its base path").first).to_be_visible(timeout=30_000)
    expect(page.get_by_text("Hold a task").first).to_be_attached()
    browsing.shot(page, "redoc", full_page=False)
    assert browsing.blocked == [], browsing.blocked
