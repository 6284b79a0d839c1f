"""The OpenAPI document, completed with what only the running configuration knows (the storage roots a
registered table's base path must lie under) and with the media type of the error bodies (RFC 9457's
`application/problem+json`, which service/errors.py sends)."""
from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI

from tms.config import Settings
from tms.hudi.storage.paths import normalize_base_path

from . import json_body
from .actions.backups import BACKUP_DESTINATION
from .errors import PROBLEM_JSON
from .routers.events import BODIES
from .schemas.common import MAX_ID, STORABLE_JSON, STORABLE_JSON_SCHEMA


def roots_pattern(roots: list[str]) -> str | None:
    """A pattern matching the paths under one of `roots` (as they are spelled after normalization)."""
    if not roots:
        return None
    spelled = sorted({normalize_base_path(root).rstrip("/") for root in roots})
    return "^(" + "|".join(re.escape(root) for root in spelled) + ")(/|$)"


def problem_media_types(schema: dict[str, Any]) -> None:
    """Every error response's JSON body declared as `application/problem+json`."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            for code, response in operation.get("responses", {}).items():
                content = response.get("content", {})
                if str(code)[0] in "45" and "application/json" in content:
                    content[PROBLEM_JSON] = content.pop("application/json")


# pydantic writes the bounds of a constrained type inside an optional one (`BodyInt | None = Field(ge=1)`) as
# its own keywords; JSON Schema's are these.
_BOUNDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def json_schema_bounds(node: Any) -> None:
    """Every `ge`/`le`/`gt`/`lt` bound in `node` (a schema or the document) renamed to JSON Schema's keyword, an
    integer's bounds as integers (FastAPI's document model holds them as floats: 2**63 - 1 became 2**63), and a
    dictionary's key pattern (which pydantic writes as `patternProperties`, leaving other keys free) as the
    pattern of every key."""
    if isinstance(node, dict):
        if node.get("type") in ("integer", "number"):
            for pydantic_name, name in _BOUNDS.items():
                if isinstance(node.get(pydantic_name), int | float):
                    node[name] = node.pop(pydantic_name)
        if node.get("type") == "integer":
            for name in _BOUNDS.values():
                if isinstance(node.get(name), float) and node[name].is_integer():
                    node[name] = max(-MAX_ID - 1, min(int(node[name]), MAX_ID))  # bigint's, the widest TMS takes
        patterns = node.get("patternProperties")
        if isinstance(patterns, dict) and len(patterns) == 1 and "propertyNames" in node:
            [(pattern, values)] = patterns.items()
            del node["patternProperties"]
            node["propertyNames"] = {**node["propertyNames"], "pattern": pattern}
            node["additionalProperties"] = values
        for value in node.values():
            json_schema_bounds(value)
    elif isinstance(node, list):
        for value in node:
            json_schema_bounds(value)


def _option(schema: dict[str, Any], kind: str) -> dict[str, Any]:
    """The `kind` option of a property's schema (of a nullable one, the option that is not null)."""
    return next((option for option in schema.get("anyOf", [schema]) if option.get("type") == kind), schema)


def confine(schemas: dict[str, Any], model: str, path: tuple[str, ...], roots: list[str], *,
            empty: bool = False) -> None:
    """The path property `path` of `model`'s schema matches only paths under `roots` (or "", if `empty`)."""
    pattern = roots_pattern(roots)
    if pattern is None or model not in schemas:
        return
    schema = schemas[model]
    for name in path:
        schema = _option(schema, "object")["properties"][name]
    target = _option(schema, "string")
    target["allOf"] = [*target.get("allOf", []), {"pattern": f"^$|{pattern}" if empty else pattern}]
    said = target.get("description", "").rstrip(".")
    target["description"] = f"{said + '. ' if said else ''}It must lie under one of {', '.join(roots)}."


def install(app: FastAPI, settings: Settings) -> None:
    generate = app.openapi
    storage_roots = settings.storage_roots
    backup_roots = [*settings.storage_roots, *settings.backup_roots]

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = generate()
        json_body.add_schemas(schema, BODIES)
        problem_media_types(schema)
        json_schema_bounds(schema)
        schemas = schema.setdefault("components", {}).setdefault("schemas", {})
        schemas[STORABLE_JSON] = STORABLE_JSON_SCHEMA
        # What only the configuration knows: the roots the paths a request names must lie under.
        confine(schemas, "TableRegistration", ("base_path",), storage_roots)
        confine(schemas, "RestoreRequest", ("target_path",), storage_roots)
        confine(schemas, "ScanRequest", ("root",), storage_roots)
        confine(schemas, "BackupPolicyIn", ("destination",), backup_roots)
        for model in ("TableRegistration", "TableChanges", "TemplateIn", "ScanRequest", "GlueSyncRequest",
                      "HiveSyncRequest"):
            confine(schemas, model, ("policies", BACKUP_DESTINATION), backup_roots, empty=True)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
