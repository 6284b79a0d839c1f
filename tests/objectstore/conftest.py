import pytest

# The object stores with a conditional create, each served on loopback: the fixture that gives a fresh base path
OBJECT_STORES = {"s3": "s3_base", "azure": "azure_base"}


@pytest.fixture(params=sorted(OBJECT_STORES))
def store_base(request):
    """A fresh base path on each object store in turn (S3 on the moto server, Azure Blob storage on Azurite)."""
    return request.getfixturevalue(OBJECT_STORES[request.param])
