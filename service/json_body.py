"""JSON request bodies that pydantic parses straight from the raw bytes (its Rust parser), for the
event intake's routes: FastAPI's own way (json.loads, then validating the Python objects) costs more
than the rest of a batch request. The body is refused and documented as FastAPI would: 422 naming
`body.<field>`, and the model's schema in the OpenAPI document."""
from __future__ import annotations

from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema

from .errors import validation_error

_REF = "#/components/schemas/{model}"
M = TypeVar("M", bound=BaseModel)


def is_json(content_type: str | None) -> bool:
    if not content_type:  # as FastAPI: a body without a content type is read as JSON
        return True
    subtype = content_type.partition(";")[0].strip().lower().partition("/")[2]
    return subtype == "json" or subtype.endswith("+json")


async def parse(request: Request, model: type[M]) -> M:
    """The request's body as `model`; a RequestValidationError (422) when it is not one."""
    body = await request.body()
    try:
        if not is_json(request.headers.get("content-type")):
            return model.model_validate(body)  # refused with the message FastAPI gives
        return model.model_validate_json(body)
    except ValidationError as exc:
        raise validation_error(exc.errors(include_url=False, include_context=False), "body") from None


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
