"""Readers of the deployment files (docker-compose.yml, deploy/), shared by the tests in tests/deploy.

No Docker engine or Kubernetes cluster runs here: these read the files as the tools would (YAML with merge
keys, compose's ${VAR:-default} interpolation, kustomize's resource list, the entry point's dispatch) so the
tests can check what a deployment relies on: the settings each role gets, the commands it runs, its health
checks, and the metrics the dashboard queries."""
from __future__ import annotations

import json
import re
import shlex
import tomllib
import typing
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from pydantic import SecretStr

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
COMPOSE_FILE = REPO / "docker-compose.yml"
DOCKERFILE = DEPLOY / "Dockerfile"
ENTRYPOINT = DEPLOY / "entrypoint.sh"
KUBERNETES = DEPLOY / "kubernetes"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "tms.json"
GRAFANA_PROVISIONING = DEPLOY / "grafana" / "provisioning"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"

# The role processes: the `tms` subcommand each runs, and whether it has an HTTP port.
ROLES = ("serve", "planner", "worker", "manager")
HEARTBEAT_ROLES = {"planner": "planner", "worker": "worker", "manager": "manager"}


# --- TMS itself ---------------------------------------------------------------------------------------
@cache
def setting_names() -> frozenset[str]:
    """Every environment variable TMS reads: TMS_<field> of tms.config.Settings, and TMS_CONFIG_FILE."""
    from tms.config import CONFIG_FILE_ENV, Settings
    return frozenset({"TMS_" + name.upper() for name in Settings.model_fields} | {CONFIG_FILE_ENV})


@cache
def secret_setting_names() -> frozenset[str]:
    """The settings that hold credentials: the SecretStr fields, and the database URL (it carries a password)."""
    from tms.config import Settings
    secret = {"TMS_DATABASE_URL"}
    for name, field in Settings.model_fields.items():
        if SecretStr in _flatten_type(field.annotation):
            secret.add("TMS_" + name.upper())
    return frozenset(secret)


def _flatten_type(annotation) -> set:
    args = typing.get_args(annotation)
    return {annotation} if not args else set().union(*(_flatten_type(a) for a in args))


@cache
def tms_commands() -> frozenset[str]:
    """The top-level subcommands of the `tms` command line (the Typer app with every role's commands)."""
    import typer.main

    from tms.cli import app
    return frozenset(typer.main.get_command(app).commands)


@cache
def entrypoint_passthrough() -> frozenset[str]:
    """The first arguments deploy/entrypoint.sh runs as given (not as `tms ARG`)."""
    text = ENTRYPOINT.read_text()
    match = re.search(r"^\s*(spark-class\|[^)]*)\)\s*$", text, re.M)
    assert match, "deploy/entrypoint.sh has no pass-through case"
    return frozenset(match.group(1).split("|"))


def image_command(argv: list[str]) -> list[str]:
    """What the image runs for container arguments `argv` (its entry point's dispatch)."""
    if argv and (argv[0] in entrypoint_passthrough() or argv[0] in ("executor", "driver")):
        return list(argv)
    return ["tms", *argv]


# --- docker compose -----------------------------------------------------------------------------------
_INTERPOLATION = re.compile(r"\$\{(\w+)(?:(:?[-?])([^}]*))?\}")


def interpolate(value):
    """Compose's variable substitution with nothing set: ${V:-default} gives the default, ${V:?message} (a
    required variable) gives <V>, ${V} gives ''."""
    if not isinstance(value, str):
        return value

    def sub(m: re.Match) -> str:
        name, op, arg = m.groups()
        if op and op.endswith("-"):
            return arg
        if op and op.endswith("?"):
            return f"<{name}>"
        return ""
    return _INTERPOLATION.sub(sub, value)


class ComposeLoader(yaml.SafeLoader):
    """YAML as Docker Compose reads it, merge keys by the YAML merge-key spec, which Compose follows: the
    mapping's own keys win over merged ones and, in a list `<<: [*a, *b]`, an earlier mapping wins over a
    later one. PyYAML's own order for lists changed between releases (6.0.3 -> 6.0.4), so it is not used."""

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        own, merged = [], []
        for key, value in node.value:
            if key.tag != "tag:yaml.org,2002:merge":
                own.append((key, value))
                continue
            sources = value.value if isinstance(value, yaml.SequenceNode) else [value]
            for source in sources:
                if not isinstance(source, yaml.MappingNode):
                    raise yaml.constructor.ConstructorError(
                        None, None, "a merge key takes a mapping or a list of mappings", source.start_mark)
                self.flatten_mapping(source)
                merged.append(source.value)
        pairs: dict[object, tuple] = {}
        # Later sources first, so that earlier ones overwrite them; the mapping's own keys last of all.
        for source in reversed(merged):
            for key, value in source:
                pairs[key.value] = (key, value)
        for key, value in own:
            pairs[key.value] = (key, value)
        node.value = list(pairs.values())


def compose_merge_lists(text: str) -> list[int]:
    """Lines of `<<:` keys whose value is a list: parsers disagree on their precedence."""
    lines = []
    for node in yaml.compose_all(text, Loader=yaml.SafeLoader):
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, yaml.MappingNode):
                for key, value in n.value:
                    if key.tag == "tag:yaml.org,2002:merge" and isinstance(value, yaml.SequenceNode):
                        lines.append(key.start_mark.line + 1)
                    stack.append(value)
            elif isinstance(n, yaml.SequenceNode):
                stack.extend(n.value)
    return lines


@cache
def compose() -> dict:
    return yaml.load(COMPOSE_FILE.read_text(), Loader=ComposeLoader)  # noqa: S506 (a SafeLoader)


def compose_services() -> dict[str, dict]:
    return compose()["services"]


def compose_command(service: dict) -> list[str]:
    command = service.get("command", [])
    return shlex.split(command) if isinstance(command, str) else list(command)


def compose_env(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {k: interpolate(str(v)) for k, v in env.items()}


def compose_role_services() -> dict[str, str]:
    """role (the `tms` subcommand) -> the compose service that runs it."""
    roles = {}
    for name, service in compose_services().items():
        command = image_command(compose_command(service))
        if command[0] == "tms" and len(command) > 1 and command[1] in ROLES:
            roles[command[1]] = name
    return roles


def compose_volumes(service: dict) -> dict[str, str]:
    """Container path -> source (a named volume, or a host path starting with . or /)."""
    mounts = {}
    for item in service.get("volumes") or []:
        if isinstance(item, dict):
            mounts[item["target"]] = item.get("source", "")
        else:
            parts = item.split(":")
            mounts[parts[1]] = parts[0]
    return mounts


def compose_healthcheck(service: dict) -> list[str]:
    test = (service.get("healthcheck") or {}).get("test") or []
    if isinstance(test, str):
        return ["CMD-SHELL", test]
    return list(test)


# --- Kubernetes ---------------------------------------------------------------------------------------
@cache
def kustomization() -> dict:
    return yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())


@cache
def manifests() -> tuple[dict, ...]:
    docs = []
    for resource in kustomization()["resources"]:
        docs += [d for d in yaml.safe_load_all((KUBERNETES / resource).read_text()) if d]
    return tuple(docs)


def find(kind: str, name: str | None = None) -> list[dict]:
    return [d for d in manifests() if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def one(kind: str, name: str) -> dict:
    found = find(kind, name)
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job")


def workloads() -> list[dict]:
    return [d for d in manifests() if d["kind"] in WORKLOAD_KINDS]


def pod_spec(workload: dict) -> dict:
    return workload["spec"]["template"]["spec"]


def k8s_role_workloads() -> dict[str, tuple[dict, dict]]:
    """role -> (workload, container) of the container that runs `tms ROLE`."""
    roles = {}
    for workload in workloads():
        for container in pod_spec(workload)["containers"]:
            command = image_command(list(container.get("command", [])) + list(container.get("args", [])))
            if command[0] == "tms" and len(command) > 1 and command[1] in ROLES:
                roles[command[1]] = (workload, container)
    return roles


def container_env(container: dict) -> dict[str, tuple[str, str]]:
    """Name -> (source, value) of the container's environment: source is configmap:NAME, secret:NAME or
    value; for the maps, every key of the ConfigMap or Secret the manifests define."""
    env: dict[str, tuple[str, str]] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            name = source["configMapRef"]["name"]
            for key, value in one("ConfigMap", name).get("data", {}).items():
                env[key] = (f"configmap:{name}", value)
        if "secretRef" in source:
            name = source["secretRef"]["name"]
            for key, value in secret_data(one("Secret", name)).items():
                env[key] = (f"secret:{name}", value)
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = ("value", item["value"])
        elif "secretKeyRef" in item.get("valueFrom", {}):
            ref = item["valueFrom"]["secretKeyRef"]
            env[item["name"]] = (f"secret:{ref['name']}", secret_data(one("Secret", ref["name"]))[ref["key"]])
        elif "configMapKeyRef" in item.get("valueFrom", {}):
            ref = item["valueFrom"]["configMapKeyRef"]
            env[item["name"]] = (f"configmap:{ref['name']}", one("ConfigMap", ref["name"])["data"][ref["key"]])
        else:
            env[item["name"]] = ("field", "")
    return env


def secret_data(secret: dict) -> dict[str, str]:
    import base64
    data = {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}
    data.update(secret.get("stringData") or {})
    return data


def matches(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


# --- the Dockerfile -----------------------------------------------------------------------------------
def dockerfile_instructions(text: str | None = None) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    text = DOCKERFILE.read_text() if text is None else text
    lines, current = [], ""
    for raw in text.splitlines():
        if not current and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        if raw.rstrip().endswith("\\"):
            current += raw.rstrip()[:-1]
            continue
        lines.append(current + raw)
        current = ""
    out = []
    for line in lines:
        instruction, _, args = line.strip().partition(" ")
        out.append((instruction.upper(), args.strip()))
    return out


def dockerfile_stages() -> dict[str, list[tuple[str, str]]]:
    """Stage name -> its instructions (FROM first); a stage FROM another stage inherits its instructions."""
    stages: dict[str, list[tuple[str, str]]] = {}
    current = None
    for instruction, args in dockerfile_instructions():
        if instruction == "FROM":
            words = args.split()
            base = words[0]
            current = words[2] if len(words) >= 3 and words[1].upper() == "AS" else f"stage{len(stages)}"
            stages[current] = list(stages.get(base, [])) + [(instruction, args)]
        elif current is not None:
            stages[current].append((instruction, args))
    return stages


def dockerfile_args() -> dict[str, str]:
    return {k: v for k, _, v in (a.partition("=") for i, a in dockerfile_instructions() if i == "ARG")}


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


# --- PromQL and Prometheus ----------------------------------------------------------------------------
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGES = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.I)
_VARIABLES = re.compile(r"\$\{[^}]*\}|\$\w+|\[\[\w+\]\]")
_IDENTIFIER = re.compile(r"(?<![\w:.])[a-zA-Z_:][a-zA-Z0-9_:]*")
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
             "offset", "atan2", "inf", "nan", "start", "end"}


def promql_metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (function names, keywords, labels, durations, numbers
    and Grafana variables left out)."""
    if "__name__" in expr:
        raise ValueError(f"cannot check a query that selects metrics by __name__: {expr}")
    text = _STRINGS.sub('""', expr)
    text = _VARIABLES.sub(" ", text)
    text = _MATCHERS.sub(" ", text)
    text = _RANGES.sub(" ", text)
    text = _GROUPING.sub(" ", text)
    names = set()
    for m in _IDENTIFIER.finditer(text):
        rest = text[m.end():].lstrip()
        if rest.startswith("(") or m.group().lower() in _KEYWORDS:
            continue  # a function or aggregation, or a keyword
        names.add(m.group())
    return names


def dashboard_queries(dashboard: dict) -> list[tuple[str, str]]:
    """(panel title, PromQL expression) of every target of every panel, rows' panels included, and of the
    dashboard's query variables."""
    queries = []

    def walk(panels):
        for panel in panels or []:
            for target in panel.get("targets") or []:
                if target.get("expr"):
                    queries.append((panel.get("title", ""), target["expr"]))
            walk(panel.get("panels"))
    walk(dashboard.get("panels"))
    for variable in (dashboard.get("templating") or {}).get("list") or []:
        query = variable.get("query")
        expr = query.get("query") if isinstance(query, dict) else query
        if variable.get("type") != "query" or not expr:
            continue
        # label_values(SELECTOR, label) and query_result(EXPR) are Grafana's; the rest is PromQL.
        label_values = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", expr, re.S)
        query_result = re.fullmatch(r"\s*query_result\((.*)\)\s*", expr, re.S)
        if label_values or query_result:
            expr = (label_values or query_result).group(1)
        elif re.fullmatch(r"\s*(label_names|label_values|metrics)\(.*\)\s*", expr, re.S):
            continue
        queries.append((f"variable {variable.get('name')}", expr))
    return queries


_SERIES_SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gaugehistogram": ("_bucket", "_gsum", "_gcount"),
    "summary": ("", "_sum", "_count", "_created"),
    "info": ("_info",),
    "stateset": ("",),
    "gauge": ("",),
    "unknown": ("",),
}


def series_names(families) -> set[str]:
    """The series names a scrape of these metric families yields (a counter `x` is queried as x_total, a
    histogram as x_bucket, x_sum and x_count), whether or not a series has been observed yet."""
    names = set()
    for family in families:
        names |= {family.name + suffix for suffix in _SERIES_SUFFIXES.get(family.type, ("",))}
        names |= {sample.name for sample in family.samples}
    return names


def unknown_metrics(dashboard: dict, exported: set[str]) -> dict[str, set[str]]:
    """Panel title -> the metric names its queries use that are not in `exported`."""
    unknown: dict[str, set[str]] = {}
    for title, expr in dashboard_queries(dashboard):
        missing = promql_metric_names(expr) - exported
        if missing:
            unknown.setdefault(title, set()).update(missing)
    return unknown


def load_dashboard(path: Path = DASHBOARD) -> dict:
    return json.loads(path.read_text())


def url_host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname, parts.port or {"http": 80, "https": 443}[parts.scheme]


def kn_name(manifest: dict) -> str:
    """kind/name of a manifest (a test id)."""
    return f"{manifest['kind']}/{manifest['metadata']['name']}"


_CONSTRUCTORS = {
    "Counter": "counter", "Gauge": "gauge", "Histogram": "histogram", "Summary": "summary", "Info": "info",
    "Enum": "stateset", "CounterMetricFamily": "counter", "GaugeMetricFamily": "gauge",
    "HistogramMetricFamily": "histogram", "SummaryMetricFamily": "summary", "InfoMetricFamily": "info",
}


def declared_metric_families(packages: tuple[str, ...]) -> set[tuple[str, str]]:
    """(name, type) of every prometheus_client metric the source of these packages constructs with a literal
    name: the metrics a role registers only when it runs (a registry made in a function, a collector)."""
    import ast

    families = set()
    for package in packages:
        for path in sorted((REPO / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call) or not node.args:
                    continue
                func = node.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                first = node.args[0]
                if name in _CONSTRUCTORS and isinstance(first, ast.Constant) and isinstance(first.value, str):
                    metric, kind = first.value, _CONSTRUCTORS[name]
                    if kind == "counter" and metric.endswith("_total"):
                        metric = metric[: -len("_total")]
                    families.add((metric, kind))
    return families
