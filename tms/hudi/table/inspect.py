"""A description of a table for people (`tms inspect`) and for JSON consumers (`tms inspect --json`)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..records.base_format import table_base_format
from ..timeline.instant import Action
from .hudi_table import HudiTable


def describe_table(table: HudiTable, capabilities: Mapping[str, tuple[bool, str]]) -> dict[str, Any]:
    """The table's config, timeline and file groups; `capabilities`: what the caller can do for the table (each
    use, whether it can run, why not), told as given."""
    cfg, tl = table.config, table.timeline
    view = table.file_system_view()
    timeline = [{"instant": i.timestamp, "action": i.action, "state": i.state.name,
                 "completion_time": tl.completion_time(i) if i.is_completed else None}
                for i in tl.instants()]
    groups = []
    for g in view.file_groups():
        groups.append({
            "partition": g.partition, "file_id": g.file_id,
            "pending_compaction": view.pending_compaction.get((g.partition, g.file_id)),
            "pending_clustering": view.pending_clustering.get((g.partition, g.file_id)),
            "slices": [{"base_instant": s.base_instant,
                        "base_file": s.base_file.file_name if s.base_file else None,
                        "base_size": s.base_size,
                        "log_files": [{"name": f.file_name, "size": f.size} for f in s.log_files],
                        "log_bytes": s.log_bytes} for s in g.slices],
        })
    pending = [{"instant": i.timestamp, "action": i.action, "state": i.state.name}
               for i in tl.pending() if i.action not in (Action.COMMIT, Action.DELTA_COMMIT)]
    inflight = [{"instant": i.timestamp, "action": i.action, "state": i.state.name}
                for i in tl.inflight_writes()]
    return {
        "base_path": table.base_path,
        "config": {"name": cfg.name, "database": cfg.database, "table_type": cfg.table_type.value,
                   "version": cfg.version, "record_key_fields": cfg.record_key_fields,
                   "ordering_fields": cfg.ordering_fields, "partition_fields": cfg.partition_fields,
                   "merge_mode": cfg.merge_mode.value, "base_file_format": table_base_format(cfg),
                   "partitions": view.partitions},
        # what TMS can do for the table: reading and each table service, or why not
        "capabilities": {service: {"can_run": can_run, "reason": reason}
                         for service, (can_run, reason) in capabilities.items()},
        "timeline": timeline,
        "file_groups": groups,
        "replaced_file_groups": [{"partition": p, "file_id": f, "by": ts} for (p, f), ts in view.replaced.items()],
        "pending_plans": pending,
        "inflight_writes": inflight,
    }


def human_size(n: float) -> str:
    """Bytes for people: 512 B, 3.4 KB, 1.2 GB."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def format_description(d: dict[str, Any]) -> str:
    c = d["config"]
    out = [f"table {c['database']}.{c['name']} at {d['base_path']}",
           f"  type {c['table_type']}, version {c['version']}, merge mode {c['merge_mode']}",
           f"  key {','.join(c['record_key_fields']) or '-'}, ordering {','.join(c['ordering_fields']) or '-'}, "
           f"partitioned by {','.join(c['partition_fields']) or '(none)'} ({len(c['partitions'])} partition(s)), "
           f"{c['base_file_format']} base files",
           "", "what TMS can do"]
    out += [f"  {service:<11} {'yes' if cap['can_run'] else 'no: ' + cap['reason']}"
            for service, cap in d["capabilities"].items()]
    out += ["", f"timeline ({len(d['timeline'])} instants)"]
    for i in d["timeline"]:
        done = f"  completed {i['completion_time']}" if i["completion_time"] else ""
        out.append(f"  {i['instant']}  {i['action']:<13} {i['state']:<10}{done}")
    out += ["", f"file groups ({len(d['file_groups'])})"]
    for g in d["file_groups"]:
        flags = "".join(f"  [pending {k} {g[f'pending_{k}']}]" for k in ("compaction", "clustering")
                        if g[f"pending_{k}"])
        out.append(f"  {g['partition'] or '(root)'}/{g['file_id']}{flags}")
        for s in g["slices"]:
            base = f"{s['base_file']} ({human_size(s['base_size'])})" if s["base_file"] else "(no base file)"
            out.append(f"    slice {s['base_instant']}: {base}, {len(s['log_files'])} log file(s) "
                       f"{human_size(s['log_bytes'])}")
    if d["replaced_file_groups"]:
        out += ["", "replaced file groups"] + [f"  {r['partition'] or '(root)'}/{r['file_id']} by {r['by']}"
                                              for r in d["replaced_file_groups"]]
    out += ["", "pending plans"] + ([f"  {p['instant']} {p['action']} {p['state']}" for p in d["pending_plans"]]
                                    or ["  (none)"])
    out += ["", "inflight writes"] + ([f"  {p['instant']} {p['action']} {p['state']}" for p in d["inflight_writes"]]
                                      or ["  (none)"])
    return "\n".join(out)

