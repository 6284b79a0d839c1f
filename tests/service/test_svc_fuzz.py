"""Property-based run over the OpenAPI schema (schemathesis) against a real service process: for
every operation, valid and invalid requests, authenticated as admin so they reach validation and the
database. None may get a 5xx, and every response must be one the schema declares: its status code, content
type, headers and body; and every request that violates the schema must be refused.

Not checked: that every schema-valid request is accepted (schemathesis' positive_data_acceptance). What a
request must also be to succeed cannot be said in JSON Schema: a base path must hold a Hudi table TMS can
read, an event names exactly one of table_id and base_path, ids must exist."""
from __future__ import annotations

import time

import hypothesis
import schemathesis
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tms.db import TaskRepo, TaskState

EXAMPLES_PER_MODE = 5  # x 2 modes x every operation (72): about 700 requests, well under a minute
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance, negative_data_rejection]
UVICORN = ["-m", "uvicorn", "--factory", "service.app:create_app", "--no-access-log", "--log-level", "warning"]


def test_no_server_errors(app, register, tokens, start_service, settings):
    # A table, a task and small ids, so generated ids sometimes hit real rows.
    table = register("mor_v6_trips_8i1u")
    with app.state.database.transaction() as session:
        TaskRepo(session).create(table_id=table["id"], service="compaction", instant="20250331040000000",
                                 state=TaskState.FAILED)
    url = start_service(UVICORN, {
        "TMS_DATABASE_URL": settings.database_url, "TMS_ADMIN_TOKEN": settings.admin_token.get_secret_value(),
        "TMS_CALLBACK_KEY": settings.callback_key.get_secret_value(),
        "TMS_STORAGE_ROOTS": ",".join(settings.storage_roots), "TMS_MAX_BODY_BYTES": str(settings.max_body_bytes),
        "TMS_MAX_BULK_BODY_BYTES": str(settings.max_bulk_body_bytes)},
        timeout=180)  # a loaded CI machine imports slowly
    schema = schemathesis.openapi.from_url(url + "/openapi.json")
    started = time.monotonic()
    calls = {"operations": 0, "requests": 0}
    server_errors: list[str] = []
    nonconforming: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        calls["operations"] += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @hypothesis.settings(max_examples=EXAMPLES_PER_MODE, deadline=None, database=None, derandomize=True,
                                 suppress_health_check=list(hypothesis.HealthCheck))
            @hypothesis.given(case=operation.as_strategy(generation_mode=mode, headers=tokens["env_admin"]))
            def run(case):
                response = case.call(base_url=url, timeout=30)
                calls["requests"] += 1
                if response.status_code >= 500:
                    server_errors.append(f"{case.method} {case.formatted_path} -> {response.status_code}: "
                                         f"{response.text[:200]} (body {case.body!r:.200})")
                if response.status_code == 413:  # too large to read: refused before its shape is known
                    return
                try:
                    case.validate_response(response, checks=CHECKS)
                except Exception as failure:  # schemathesis' failures (an exception group of them)
                    nonconforming.append(f"{case.method} {case.formatted_path} -> {response.status_code}: "
                                         f"{str(failure)[:300]} (body {case.body!r:.200})")

            try:
                run()
            except Unsatisfiable:  # nothing to make invalid (an operation without inputs)
                assert mode is GenerationMode.NEGATIVE, operation.label
    print(f"{calls['operations']} operations, {calls['requests']} requests in {time.monotonic() - started:.1f} s")
    assert server_errors == []
    assert nonconforming == []
