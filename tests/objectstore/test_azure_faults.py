"""Faults of Azure Blob storage (a fault-injecting proxy on loopback in front of Azurite): a create-once file
whose Put Blob answer was lost is retried by the Azure SDK, and the retry meets the blob its first attempt made.
A token of the create in the blob's metadata tells that blob is the writer's own, not another writer's: the
create succeeds once, and another writer's create of the same file still loses."""
from __future__ import annotations

import pytest
from fault_proxy import FaultProxy

from tms.hudi.errors import InstantConflictError
from tms.hudi.storage.table_storage import open_storage

INSTANT = ".hoodie/timeline/20260101000000000.commit.requested"


@pytest.fixture
def proxy(azure_endpoint):
    proxy = FaultProxy.start(azure_endpoint.url.rsplit("/", 1)[0])
    yield proxy
    proxy.stop()


def test_a_create_whose_answer_was_lost_is_known_as_the_writers_own_on_retry_not_a_conflict(
        proxy, azure_endpoint, azure_base):
    account = azure_endpoint.url.rsplit("/", 1)[1]
    through_proxy = azure_endpoint.connection_string.replace(azure_endpoint.url, f"{proxy.url}/{account}")
    storage = open_storage(azure_base, {"connection_string": through_proxy})
    proxy.fail("lost_answer", method="PUT", path_contains="commit.requested", times=1)
    storage.write_atomic(INSTANT, b"plan")  # the SDK's retry meets the blob its first attempt made: its own
    assert proxy.injected("lost_answer") == 1
    assert storage.read_bytes(INSTANT) == b"plan"
    with pytest.raises(InstantConflictError):  # another writer's create still loses
        open_storage(azure_base, {"connection_string": through_proxy}).write_atomic(INSTANT, b"other")
    assert storage.read_bytes(INSTANT) == b"plan"
