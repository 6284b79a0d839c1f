"""Alerts sent to webhooks: the payloads and their signatures (`payload`), and their delivery with retries
(`delivery`), by the manager's leader and, while no manager leads, by the `no_leader` watchers."""
