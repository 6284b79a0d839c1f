"""The OpenAPI document, completed with what only the running configuration knows (the storage roots a
registered table's base path must lie under) and with the media type of the error bodies (RFC 9457's
`application/problem+json`, which service/errors.py sends)."""
from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI

from tms.hudi.storage.paths import normalize_base_path

from . import json_body
from .errors import PROBLEM_JSON
from .routers.events import BODIES


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


def install(app: FastAPI, storage_roots: list[str]) -> None:
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = generate()
        json_body.add_schemas(schema, BODIES)
        problem_media_types(schema)
        pattern = roots_pattern(storage_roots)
        registration = schema.get("components", {}).get("schemas", {}).get("TableRegistration")
        if pattern and registration:
            base_path = registration["properties"]["base_path"]
            base_path["pattern"] = pattern
            base_path["description"] += f" It must lie under one of the storage roots: {', '.join(storage_roots)}."
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
