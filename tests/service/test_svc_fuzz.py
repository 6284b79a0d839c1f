"""Property-based run over the OpenAPI schema (schemathesis): for every operation, valid and invalid
requests, authenticated as admin so they reach validation and the database. None may get a 5xx."""
from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from tms.db import TaskRepo, TaskState

EXAMPLES_PER_MODE = 15  # x 2 modes x ~23 operations: about 700 requests, well under a minute


@pytest.fixture
def seeded(client, app, register):
    """A table, a task and a queue with small ids, so generated ids sometimes hit real rows."""
    table = register("mor_v6_trips_8i1u")
    with app.state.database.transaction() as session:
        TaskRepo(session).create(table_id=table["id"], action="compaction", instant="20250331040000000",
                                 state=TaskState.FAILED)
    return client


def test_no_server_errors(app, seeded, tokens):
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    headers = tokens["env_admin"]
    server_errors: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @settings(max_examples=EXAMPLES_PER_MODE, deadline=None, database=None, derandomize=True,
                      suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy(generation_mode=mode, headers=headers))
            def run(case):
                response = case.call()
                if response.status_code >= 500:
                    server_errors.append(f"{case.method} {case.formatted_path} -> {response.status_code}: "
                                         f"{response.text[:200]} (body {case.body!r:.200})")

            run()
    assert server_errors == []
