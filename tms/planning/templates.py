"""Policy templates: rules by database, table-name pattern or base-path prefix that give tables their policy
options, queue, priority and writers' lock options. The most specific template matching a table applies; the
table's own settings override it; whatever neither sets is TablePolicy's default. Pure: resolved from the
rows given.

Most specific, as rollout rules (a table's rule before its database's): a template naming the table (a
name pattern) before one naming its database, before one naming a path prefix alone; among equals, the longer
path prefix, then the pattern with more literal characters, then the first name.

The lock options are one group: a table with lock options of its own takes none of the template's (a
template's ZooKeeper settings mixed into a table's own filesystem lock would describe no lock at all)."""
from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tms.hudi.table.write_options import split_concurrency_options
from tms.planning.policy import TablePolicy

TABLE = "table"
DEFAULT = "default"
TEMPLATE_PREFIX = "template:"
QUEUE = "queue"
PRIORITY = "priority"
# Options a template may not set: they name a column of one table, or hold only for tables partitioned by time
# (a template giving them to every matching table would give most of them an objective they cannot honour).
PER_TABLE_OPTIONS = ("tms.ttl.field", "tms.ttl.days", "hoodie.partition.ttl.days.retain")


@dataclass(frozen=True)
class Template:
    name: str
    database: str | None = None
    name_pattern: str | None = None  # an fnmatch pattern over the table's name (or "database.name")
    path_prefix: str | None = None   # a base-path prefix, matched at folder boundaries
    policies: Mapping[str, Any] = field(default_factory=dict)  # Hudi names: policy and lock options
    queue: str | None = None
    priority: int | None = None

    def matches(self, *, database: str, name: str, base_path: str) -> bool:
        if self.database is not None and self.database != database:
            return False
        if self.name_pattern is not None and not (fnmatch.fnmatchcase(name, self.name_pattern)
                                                  or fnmatch.fnmatchcase(f"{database}.{name}", self.name_pattern)):
            return False
        return self.path_prefix is None or _under(base_path, self.path_prefix)

    def specificity(self) -> tuple[bool, bool, int, int]:
        literal = sum(1 for c in self.name_pattern or "" if c not in "*?[]!")
        return (self.name_pattern is not None, self.database is not None, len(self.path_prefix or ""), literal)


def _under(base_path: str, prefix: str) -> bool:
    prefix = prefix.rstrip("/")
    return base_path == prefix or base_path.startswith(prefix + "/")


def matching_template(templates: Iterable[Template], *, database: str, name: str,
                      base_path: str) -> Template | None:
    matching = [t for t in templates if t.matches(database=database, name=name, base_path=base_path)]
    if not matching:
        return None
    best = max(t.specificity() for t in matching)
    return min((t for t in matching if t.specificity() == best), key=lambda t: t.name)


@dataclass(frozen=True)
class Effective:
    """A table's settings as TMS uses them (the columns stored on its row) and where each comes from: a key
    (a Hudi option name, `queue`, `priority`) -> `table` or `template:<name>`; a key absent is the default."""

    policies: dict[str, Any]
    concurrency_options: dict[str, str]
    queue: str | None
    priority: int
    template: str | None
    sources: dict[str, str]

    def columns(self) -> dict[str, Any]:
        return {"policies": self.policies, "concurrency_options": self.concurrency_options, "queue": self.queue,
                "priority": self.priority, "template": self.template}

    def source(self, key: str) -> str:
        return self.sources.get(key, DEFAULT)


def own_settings(*, policies: Mapping[str, Any] | None = None, concurrency_options: Mapping[str, str] | None = None,
                 queue: str | None = None, priority: int | None = None) -> dict[str, Any]:
    """The table's own settings as stored (`tables.own_settings`): only what it set."""
    own: dict[str, Any] = {"policies": dict(policies or {}), "concurrency_options": dict(concurrency_options or {})}
    if queue is not None:
        own[QUEUE] = queue
    if priority is not None:
        own[PRIORITY] = priority
    return own


def resolve(own: Mapping[str, Any], template: Template | None) -> Effective:
    """The effective settings of a table whose own settings are `own`, under `template` (None: no template)."""
    own_policies = dict(own.get("policies") or {})
    own_locks = dict(own.get("concurrency_options") or {})
    sources = dict.fromkeys([*own_policies, *own_locks], TABLE)
    policies, locks = dict(own_policies), dict(own_locks)
    queue, priority = own.get(QUEUE), own.get(PRIORITY)
    if QUEUE in own:
        sources[QUEUE] = TABLE
    if PRIORITY in own:
        sources[PRIORITY] = TABLE
    if template is not None:
        origin = TEMPLATE_PREFIX + template.name
        template_locks, template_policies = split_concurrency_options(template.policies)
        for key, value in template_policies.items():
            if key not in policies:
                policies[key] = value
                sources[key] = origin
        if not own_locks:
            locks = {k: str(v) for k, v in template_locks.items()}
            sources.update(dict.fromkeys(locks, origin))
        if queue is None and template.queue is not None and QUEUE not in own:
            queue, sources[QUEUE] = template.queue, origin
        if priority is None and template.priority is not None:
            priority, sources[PRIORITY] = template.priority, origin
    return Effective(policies=TablePolicy.from_stored(policies).explicit(), concurrency_options=locks, queue=queue,
                     priority=int(priority or 0), template=template.name if template else None, sources=sources)
