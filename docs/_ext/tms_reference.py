"""Sphinx extension: the configuration reference from `tms.config.Settings` and the API reference from the
service's OpenAPI document, generated at build time, so neither can drift from the code.

A page asks for one by a line of its own, which is replaced by Markdown before MyST parses the page:

    <!-- tms:settings -->     every TMS_* setting: variable, type, default, description
    <!-- tms:openapi -->      every route of `service.app.create_app()` and every schema it names

A setting without a description fails the build."""
from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

SETTINGS_MARKER = "<!-- tms:settings -->"
OPENAPI_MARKER = "<!-- tms:openapi -->"

# Settings are listed in groups by the prefix of their name (the class's own order within a group).
SETTING_GROUPS = [
    ("worker_", "Worker"),
    ("planner_", "Planner"),
    ("retry_", "Retries"),
    ("manager_", "Manager"),
    ("monitor_", "Alert rules"),
    ("engine_", "Engines and canary rollout"),
    ("canary_", "Engines and canary rollout"),
    ("webhook_", "Webhooks"),
    ("retention_", "Retention"),
]
GENERAL_GROUP = "Service and every process"


def _cell(text: str) -> str:
    """Text fit for one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _type_text(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_text(args[0])
    if origin in (typing.Union, types.UnionType):
        kinds = [_type_text(a) for a in args if a is not type(None)]
        return " or ".join(kinds) + (", optional" if type(None) in args else "")
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin is list:
        return f"comma-separated list, each {_type_text(args[0])}" if args else "comma-separated list"
    if origin is dict:
        return f"JSON object of {_type_text(args[0])} -> {_type_text(args[1])}"
    names = {str: "string", int: "integer", float: "number", bool: "boolean (`true`, `false`)", Path: "path",
             SecretStr: "secret string"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _bounds(field: FieldInfo) -> str:
    signs = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    found = [f"{signs[name]} {getattr(m, name)}" for m in field.metadata for name in signs
             if getattr(m, name, None) is not None]
    return f" ({', '.join(found)})" if found else ""


def _value_text(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    if isinstance(value, list):
        return f"`{','.join(str(v) for v in value)}`" if value else "empty"
    return f"`{value}`"


def _default_text(field: FieldInfo) -> str:
    if field.default_factory is not None:
        return _value_text(field.default_factory())  # type: ignore[call-arg]
    if field.default is PydanticUndefined:
        return "required"
    return _value_text(field.default)


def settings_markdown() -> str:
    from tms.config import Settings

    fields = Settings.model_fields
    missing = [f"TMS_{name.upper()}" for name, f in fields.items() if not (f.description or "").strip()]
    if missing:
        raise ExtensionError("tms.config.Settings: a setting without a description (Field(description=...)): "
                             + ", ".join(missing))
    prefix = Settings.model_config.get("env_prefix", "")
    groups: dict[str, list[str]] = {GENERAL_GROUP: []}
    for _, title in SETTING_GROUPS:
        groups.setdefault(title, [])
    for name, field in fields.items():
        title = next((t for p, t in SETTING_GROUPS if name.startswith(p)), GENERAL_GROUP)
        groups[title].append(
            f"| `{prefix}{name.upper()}` | {_cell(_type_text(field.annotation) + _bounds(field))} "
            f"| {_cell(_default_text(field))} | {_cell(field.description or '')} |")
    out = []
    for title, rows in groups.items():
        if rows:
            out += [f"## {title}", "", "| Variable | Type | Default | Description |", "|---|---|---|---|", *rows, ""]
    for model in _nested_models(fields):
        out += [f"### {model.__name__}", "", _cell(model.__doc__ or ""), "",
                "| Key | Type | Default | Description |", "|---|---|---|---|"]
        out += [f"| `{name}` | {_cell(_type_text(f.annotation))} | {_cell(_default_text(f))} "
                f"| {_cell(f.description or '')} |" for name, f in model.model_fields.items()]
        out.append("")
    return "\n".join(out)


def _nested_models(fields: dict[str, FieldInfo]) -> list[type[BaseModel]]:
    """The models settings hold values of (a JSON object's values), each documented in a table of its own."""
    found = []
    for field in fields.values():
        for arg in typing.get_args(field.annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel) and arg not in found:
                found.append(arg)
    return found


def _schema_label(name: str) -> str:
    return "api-schema-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _schema_text(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"{{ref}}`{name} <{_schema_label(name)}>`"
    for combinator in ("anyOf", "oneOf", "allOf"):
        if combinator in schema:
            return " or ".join(_schema_text(s) for s in schema[combinator])
    if "enum" in schema:
        return "one of " + ", ".join(f"`{v}`" for v in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return "array of " + _schema_text(schema.get("items", {}))
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return "object of " + _schema_text(schema["additionalProperties"])
    if kind is None:
        return "any"
    return f"{kind} ({schema['format']})" if "format" in schema else str(kind)


def _body_schema(content: dict[str, Any]) -> str:
    parts = [f"{_schema_text(media.get('schema', {}))} (`{kind}`)" for kind, media in content.items()]
    return ", ".join(parts)


def openapi_markdown() -> str:
    spec = _openapi()
    out: list[str] = []
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            if method.startswith("x-") or method == "parameters":
                continue
            tag = (operation.get("tags") or [_path_group(path)])[0]
            by_tag.setdefault(tag, []).append((path, method, operation))
    for tag in sorted(by_tag):
        out += [f"## {tag.capitalize()}", ""]
        for path, method, operation in by_tag[tag]:
            out += _operation_markdown(path, method, operation)
    out += ["## Schemas", ""]
    for name, schema in sorted(spec.get("components", {}).get("schemas", {}).items()):
        out += _schema_markdown(name, schema)
    return "\n".join(out)


def _path_group(path: str) -> str:
    parts = [p for p in path.split("/") if p and p not in ("api", "v1")]
    return re.split(r"[:{]", parts[0])[0] if parts else "root"


def _operation_markdown(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    out = [f"### `{method.upper()} {path}`", ""]
    if operation.get("summary"):
        out += [f"**{operation['summary']}**", ""]
    if operation.get("description"):
        out += [operation["description"].strip(), ""]
    parameters = operation.get("parameters", [])
    if parameters:
        out += ["| Parameter | In | Type | Required | Description |", "|---|---|---|---|---|"]
        for p in parameters:
            out.append(f"| `{p['name']}` | {p['in']} | {_cell(_schema_text(p.get('schema', {})))} "
                       f"| {'yes' if p.get('required') else 'no'} | {_cell(p.get('description', ''))} |")
        out.append("")
    body = operation.get("requestBody")
    if body:
        out += [f"Request body{' (required)' if body.get('required') else ''}: {_body_schema(body['content'])}", ""]
    responses = operation.get("responses", {})
    if responses:
        out += ["| Status | Meaning | Body |", "|---|---|---|"]
        for status, response in responses.items():
            out.append(f"| {status} | {_cell(response.get('description', ''))} "
                       f"| {_cell(_body_schema(response.get('content', {})))} |")
        out.append("")
    return out


def _schema_markdown(name: str, schema: dict[str, Any]) -> list[str]:
    out = [f"({_schema_label(name)})=", f"### {name}", ""]
    if schema.get("description"):
        out += [" ".join(schema["description"].split()), ""]
    properties = schema.get("properties", {})
    if "enum" in schema:
        out += [_schema_text(schema), ""]
    if properties:
        required = set(schema.get("required", []))
        out += ["| Field | Type | Required | Description |", "|---|---|---|---|"]
        for field, spec in properties.items():
            out.append(f"| `{field}` | {_cell(_schema_text(spec))} | {'yes' if field in required else 'no'} "
                       f"| {_cell(spec.get('description', ''))} |")
        out.append("")
    return out


def _openapi() -> dict[str, Any]:
    """The service's OpenAPI document, as `/openapi.json` serves it, from an app that is built but never
    started: nothing connects to the database (the URL below is never dialled)."""
    from service.app import create_app
    from tms.config import Settings
    from tms.db import Database

    settings = Settings.model_construct(database_url="postgresql://docs@127.0.0.1:9/docs")
    return create_app(settings, Database(settings.database_url)).openapi()


GENERATORS = {SETTINGS_MARKER: settings_markdown, OPENAPI_MARKER: openapi_markdown}


def _replace_markers(app: Sphinx, docname: str, source: list[str]) -> None:
    for marker, generate in GENERATORS.items():
        if marker in source[0]:
            source[0] = source[0].replace(marker, generate())


def _always_regenerated(app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """Pages with a generated reference are read again on every build: the code they come from may change."""
    return [name for name in env.found_docs
            if any(m in Path(env.doc2path(name)).read_text(encoding="utf-8") for m in GENERATORS)]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("source-read", _replace_markers)
    app.connect("env-get-outdated", _always_regenerated)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
