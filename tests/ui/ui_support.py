"""What the browser tests share: signing in as a role."""
from __future__ import annotations

from playwright.sync_api import Page, expect


def sign_in(page: Page, stack, role: str) -> None:
    page.goto(stack.url + "/")
    expect(page.get_by_role("heading", name="Sign in to TMS")).to_be_visible()
    page.get_by_label("API token").fill(stack.tokens[role])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(stack.url + "/ui/")
    expect(page.get_by_text(role, exact=True)).to_be_visible()
