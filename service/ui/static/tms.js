// The dashboard's own script (no library): confirm actions, and refresh the page's main part while it is open.
"use strict";

document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form.getAttribute && form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

function busy(main) {
  // Never replace what the user is working with: a focused field, an open editor or log, selected text.
  const active = document.activeElement;
  if (active && main.contains(active) && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName)) return true;
  if (main.querySelector("details[open]")) return true;
  const selection = window.getSelection();
  return Boolean(selection && selection.toString());
}

async function refresh(main) {
  if (document.hidden || busy(main)) return;
  try {
    const response = await fetch(window.location.href, {headers: {"X-TMS-Refresh": "1"}, credentials: "same-origin"});
    if (!response.ok || response.redirected) return;
    const page = new DOMParser().parseFromString(await response.text(), "text/html");
    const fresh = page.getElementById("main");
    if (fresh && !busy(main)) {
      main.innerHTML = fresh.innerHTML;
      main.dispatchEvent(new CustomEvent("tms:refreshed", {bubbles: true}));
    }
  } catch (error) {
    // The service is restarting or the network is down: try again at the next tick.
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const main = document.getElementById("main");
  const seconds = main && Number(main.getAttribute("data-refresh"));
  if (seconds > 0) {
    window.setInterval(() => refresh(main), seconds * 1000);
  }
});
