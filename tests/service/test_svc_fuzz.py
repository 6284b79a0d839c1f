"""Property-based run over the OpenAPI schema (schemathesis) against a real service process: for
every operation, valid and invalid requests, authenticated as admin so they reach validation and the
database. None may get a 5xx, and every response must be one the schema declares: its status code, content
type, headers and body; and every request that violates the schema must be refused.

And every request the schema admits is accepted (positive_data_acceptance: 2xx, or 404/409 for what the state
of things refuses), but for the refusals in NOT_IN_THE_SCHEMA: what a request names must also exist or hold
something on this machine or its storage, which no schema can say."""
from __future__ import annotations

import re
import time

import hypothesis
import schemathesis
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tms.db import TaskRepo, TaskState

EXAMPLES_PER_MODE = 5  # x 2 modes x every operation (72): about 700 requests, well under a minute
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance, negative_data_rejection, positive_data_acceptance]
# The 422s of schema-valid requests for what no schema can say: what exists, combinations of values (operation,
# "" for any; a pattern of the refusal's detail).
NOT_IN_THE_SCHEMA = [
    # Text PostgreSQL can store: a lone surrogate (\ud800 alone), which not every JSON Schema tool's patterns see.
    ("", r"must be valid Unicode \(no lone surrogates\)"),
    # What is at a base path: a Hudi table TMS can read.
    ("POST /api/v1/tables", r"^body\.base_path: .* (does not exist|is not a Hudi table.*)$"),
    # The writers' lock: a provider TMS can share, with the options it needs (a combination of values).
    ("", r"^body\.policies\.(hoodie\.write\.|hoodie\.time\.generator\.)"),
    # Record TTL: a field and a number of days, together with the table's own (a PATCH's), of a column the table
    # has; partition TTL of a partitioned table.
    ("", r"^body\.policies(\.tms\.ttl\.field|\.hoodie\.partition\.ttl\.days\.retain)?: "
         r"(tms\.ttl\.field and tms\.ttl\.days are set together|table .*)"),
    # A cron expression's values within their fields' ranges, ranges ascending.
    ("", r"backup schedule .* is neither daily, hourly nor a cron expression"),
    # Files on the service's machine (spark-submit, Spark, the job code) and engines that exist.
    ("PUT /api/v1/engines/{name}", r"is not an executable file|has no bin/spark-submit|no code_path given|"
                                   r"no job code at|needs its own spark_submit|Hudi's bundle|pyspark"),
    ("PUT /api/v1/rollouts/{name}", r"^(stable|canary)_engine: no engine named"),
    # Catalogs this service is configured for and can reach.
    ("POST /api/v1/discovery/glue-sync", r"^cannot read the Glue database|Glue sync is not installed"),
    ("POST /api/v1/discovery/hive-sync", r"^no Hive Metastore is configured|cannot reach"),
]
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
                checks = CHECKS
                if mode is GenerationMode.POSITIVE and _not_in_the_schema(case, response):  # noqa: B023
                    checks = [check for check in CHECKS if check is not positive_data_acceptance]
                try:
                    case.validate_response(response, checks=checks)
                except BaseExceptionGroup as failure:  # schemathesis' failures (a FailureGroup)
                    nonconforming.append(f"{mode.name} {case.method} {case.path} -> {response.status_code}: "  # noqa: B023
                                         f"{'; '.join(str(f).splitlines()[0] for f in failure.exceptions)}: "
                                         f"{response.text[:300]} (body {case.body!r:.200})")

            try:
                run()
            except Unsatisfiable:  # nothing to make invalid (an operation without inputs)
                assert mode is GenerationMode.NEGATIVE, operation.label
    print(f"{calls['operations']} operations, {calls['requests']} requests in {time.monotonic() - started:.1f} s")
    assert server_errors == [], "\n".join(server_errors)
    assert nonconforming == [], "\n".join(nonconforming)


def _not_in_the_schema(case, response) -> bool:
    if response.status_code != 422:
        return False
    detail = response.json().get("detail", "")
    return any(operation in ("", f"{case.method} {case.path}") and re.search(pattern, detail)
               for operation, pattern in NOT_IN_THE_SCHEMA)
