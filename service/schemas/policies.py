"""The JSON Schema of a `policies` object (a table's, a policy template's, discovery's new tables'): TMS's policy
options and the writers' concurrency-control options by their Hudi names, each with the type of its value (null:
back to its default), and no other name."""
from __future__ import annotations

import copy
from typing import Any

from tms.hudi.locks.config import _KNOWN as CONCURRENCY_OPTIONS
from tms.planning.policy import COMPACTION_STRATEGY_PACKAGE, CompactionStrategy, TablePolicy
from tms.planning.templates import PER_TABLE_OPTIONS

# What a concurrency option may be: Hudi's options are strings; numbers and flags are taken as they read.
_CONCURRENCY_VALUE = {"type": ["string", "number", "boolean", "null"], "pattern": r"^[^\u0000]*$"}


def _inlined(schema: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref:
        return {**definitions[ref.rsplit("/", 1)[1]], **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _policy_option_schemas() -> dict[str, Any]:
    model = TablePolicy.model_json_schema(by_alias=True)
    definitions = model.get("$defs", {})
    options: dict[str, Any] = {}
    for name, schema in model["properties"].items():
        value = {k: v for k, v in _inlined(schema, definitions).items() if k not in ("default", "title")}
        if name == TablePolicy.model_fields["compaction_strategy"].alias:  # the class's simple name too
            value["enum"] = [*value["enum"], *(s.removeprefix(COMPACTION_STRATEGY_PACKAGE)
                                               for s in CompactionStrategy)]
        options[name] = {"anyOf": [value, {"type": "null"}]}
    return options


POLICY_OPTIONS = _policy_option_schemas()
CONCURRENCY = {name: _CONCURRENCY_VALUE for name in sorted(CONCURRENCY_OPTIONS)}


def _object_of(options: dict[str, Any]):
    def extra(schema: dict[str, Any]) -> None:
        target = next((s for s in schema.get("anyOf", [schema]) if s.get("type") == "object"), schema)
        target["properties"] = copy.deepcopy(options)  # the document completes some (service/openapi.py)
        target["additionalProperties"] = False

    return extra


# `json_schema_extra=` of a `policies` field: TMS's policy options and the concurrency options (a table's), or the
# policy options alone (discovery's new tables).
policies_schema = _object_of({**POLICY_OPTIONS, **CONCURRENCY})
policy_options_schema = _object_of(POLICY_OPTIONS)
# A policy template's: without the options only a table can have.
template_policies_schema = _object_of({name: schema for name, schema in {**POLICY_OPTIONS, **CONCURRENCY}.items()
                                       if name not in PER_TABLE_OPTIONS})
