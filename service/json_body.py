"""JSON request bodies that pydantic parses straight from the raw bytes (its Rust parser), for the
event intake's routes: FastAPI's own way (json.loads, then validating the Python objects) costs more
than the rest of a batch request. The body is refused and documented as on FastAPI's routes: 400 when it is
not JSON, 422 naming `body.<field>`, and the model's schema in the OpenAPI document."""
from __future__ import annotations

from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema

from .errors import BodyNotJson, is_json, validation_error

_REF = "#/components/schemas/{model}"
M = TypeVar("M", bound=BaseModel)


async def parse(request: Request, model: type[M]) -> M:
    """The request's body as `model`; BodyNotJson (400) when it is not JSON, a RequestValidationError (422)
    when it is not one."""
    content_type = request.headers.get("content-type")
    if not is_json(content_type):
        raise BodyNotJson(content_type)
    body = await request.body()
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False)
        if any(e["type"] == "json_invalid" for e in errors):
            raise BodyNotJson(content_type) from None
        raise validation_error(errors, "body") from None


def documented(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra=` declaring `model` as the route's required JSON body."""
    schema = {"$ref": _REF.format(model=model.__name__)}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def add_schemas(openapi: dict[str, Any], models: list[type[BaseModel]]) -> None:
    """Put the models' schemas (and those they use) into the document's components."""
    _, definitions = models_json_schema([(model, "validation") for model in models], ref_template=_REF)
    schemas = openapi.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in definitions.get("$defs", {}).items():
        schemas.setdefault(name, schema)
