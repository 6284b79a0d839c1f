"""Every page of the dashboard, at a desktop and a laptop width, as an admin sees it: the navigation is there
(error pages included, and the API docs link back), no two pieces of text overlap (chart labels included, each
inside its chart and legible, no empty chart drawn),
long policy keys break only after a dot, and a checkbox sits next to its label. A screenshot of each is
written (see tests/ui/conftest.py)."""
from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect
from support import FIXTURE_TABLES
from ui_support import sign_in

pytestmark = pytest.mark.slow

WIDTHS = (1400, 1000)
NAVIGATION = ("Overview", "Tables", "Fleet", "Tasks", "Queues", "Alerts")

# Each visible piece of text as the boxes of its lines; any two boxes of different text nodes that cross by
# more than a pixel or two each way overlap. Text clipped away by a scrolling container is not visible.
_OVERLAPS = """() => {
  const boxes = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let id = 0;
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const el = node.parentElement;
    if (!el || !node.textContent.trim() || el.closest('title, script, style, details:not([open]) > :not(summary)'))
      continue;
    const style = getComputedStyle(el);
    if (style.visibility !== 'visible' || style.opacity === '0') continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    id += 1;
    for (const r of range.getClientRects()) {
      if (r.width >= 1 && r.height >= 1)
        boxes.push({id, text: node.textContent.trim().slice(0, 50), l: r.left, t: r.top, r: r.right, b: r.bottom});
    }
  }
  const out = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    if (a.id === b.id) continue;
    const w = Math.min(a.r, b.r) - Math.max(a.l, b.l), h = Math.min(a.b, b.b) - Math.max(a.t, b.t);
    if (w > 2 && h > 2) out.push(`${JSON.stringify(a.text)} over ${JSON.stringify(b.text)}`);
  }
  return out.slice(0, 8);
}"""

# Policy keys (hoodie.clustering.plan.strategy.small.file.limit) that wrap: each line but the last ends with a dot.
_MID_WORD_BREAKS = """() => {
  const out = [];
  for (const el of document.querySelectorAll('.policy-key')) {
    const chars = [];
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      for (let i = 0; i < node.textContent.length; i++) {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        chars.push([node.textContent[i], range.getBoundingClientRect().top]);
      }
    }
    for (let i = 1; i < chars.length; i++) {
      if (chars[i][1] > chars[i - 1][1] + 2 && chars[i - 1][0] !== '.')
        out.push(`${el.textContent} breaks after ${el.textContent.slice(0, i)}`);
    }
  }
  return out;
}"""

# Chart labels: each inside its chart, and drawn at 9 px or more however the chart is scaled to its column; an
# empty chart is a line of text, not an empty frame.
_CHART_LABELS = """() => {
  const out = [];
  for (const svg of document.querySelectorAll('figure.chart svg')) {
    const box = svg.getBoundingClientRect();
    const scale = box.width / svg.viewBox.baseVal.width;
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (r.width < 1) continue;
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        out.push(`${t.textContent} runs outside its chart (${svg.getAttribute('class')})`);
      const px = parseFloat(getComputedStyle(t).fontSize) * scale;
      if (px < 9) out.push(`${t.textContent} drawn at ${px.toFixed(1)} px (${svg.getAttribute('class')})`);
    }
    if (!svg.querySelector('rect')) out.push(`an empty chart drawn (${svg.getAttribute('class')})`);
  }
  return out.slice(0, 8);
}"""

# A checkbox and its label: on one line, the label's text starting within 12 px of the box.
_LOOSE_CHECKBOXES = """() => {
  const out = [];
  for (const box of document.querySelectorAll('input[type=checkbox]')) {
    const label = box.closest('label') || (box.id && document.querySelector(`label[for="${box.id}"]`));
    if (!label || box.offsetParent === null) continue;
    const range = document.createRange();
    range.selectNodeContents(label);
    const texts = [...range.getClientRects()].filter(r => r.width > 1);
    const b = box.getBoundingClientRect();
    const near = texts.some(r => Math.abs(r.left - b.right) <= 12 && r.top < b.bottom && r.bottom > b.top);
    if (!near) out.push(label.textContent.trim().slice(0, 50));
  }
  return out;
}"""


@pytest.fixture(scope="module")
def pages(stack, fixtures_root) -> list[tuple[str, str]]:
    """(name, path) of every page, a table and a task with content."""
    table = stack.register(fixtures_root / FIXTURE_TABLES["mor_v6_trips_8i1u"], "layout_trips",
                           policies={"hoodie.clustering.plan.strategy.single.group.clustering.enabled": False,
                                     "hoodie.compact.inline.max.delta.commits": 2})
    instant = stack.plan_compaction(table)
    task = stack.api("GET", "/api/v1/tasks", params={"table": table["id"], "limit": 1}).json()["items"]
    task_path = f"/ui/tasks/{task[0]['id']}" if task else "/ui/tasks"
    assert instant
    stack.api("PUT", "/api/v1/policy-templates/layout", json={
        "name_pattern": "layout_*", "policies": {"hoodie.cleaner.commits.retained": 12}, "priority": 3})
    assert stack.api("POST", "/api/v1/fleet/health:score", json={"table_ids": [table["id"]]}).status_code == 200
    return [("overview", "/ui/"), ("tables", "/ui/tables"), ("table", f"/ui/tables/{table['id']}"),
            ("fleet", "/ui/fleet"), ("tasks", "/ui/tasks"), ("task", task_path), ("queues", "/ui/queues"),
            ("engines", "/ui/engines"),
            ("alerts", "/ui/alerts?show=all"), ("mutes", "/ui/mutes"), ("webhooks", "/ui/webhooks"),
            ("instances", "/ui/instances"), ("no-such-table", "/ui/tables/987654"),
            ("no-such-page", "/ui/no/such/page")]


def _problems(page: Page) -> dict[str, list[str]]:
    return {"overlapping text": page.evaluate(_OVERLAPS),
            "policy keys broken mid-word": page.evaluate(_MID_WORD_BREAKS),
            "checkboxes apart from their labels": page.evaluate(_LOOSE_CHECKBOXES),
            "chart labels": page.evaluate(_CHART_LABELS)}


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_has_the_navigation_and_nothing_overlaps(stack, browsing, pages, width):
    page = browsing.page()
    page.set_viewport_size({"width": width, "height": 900})
    sign_in(page, stack, "admin")
    found = {}
    for name, path in pages:
        page.goto(stack.url + path)
        nav = page.locator("header nav")
        for link in NAVIGATION:
            expect(nav.get_by_role("link", name=link, exact=True)).to_be_visible()
        if name == "table":
            page.get_by_text("Edit settings").click()  # the settings form too
        browsing.shot(page, f"layout-{name}-{width}")
        problems = {kind: found for kind, found in _problems(page).items() if found}
        if problems:
            found[name] = problems
    assert found == {}, found
    page.goto(stack.url + "/docs")
    expect(page.get_by_role("link", name="TMS dashboard")).to_be_visible()
    browsing.shot(page, f"layout-docs-{width}", full_page=False)
    assert browsing.blocked == []
