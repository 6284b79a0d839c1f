"""A clean's deletes on S3 are batch deletes: one DeleteObjects request per 1,000 files, every path still
confined to the table."""
from concurrent.futures import ThreadPoolExecutor

import pytest

from tms.hudi.storage.paths import PathOutsideTableError
from tms.hudi.storage.table_storage import S3_DELETE_BATCH, open_storage


def _counting(storage, monkeypatch) -> list[str]:
    """The S3 operations the storage sends from now on."""
    calls: list[str] = []
    real = storage._fs._call_s3

    async def call_s3(method, *args, **kwargs):
        calls.append(method)
        return await real(method, *args, **kwargs)
    monkeypatch.setattr(storage._fs, "_call_s3", call_s3)
    return calls


def test_batch_delete_on_s3_takes_one_request_per_thousand_files(s3_endpoint, s3_base, monkeypatch):
    storage = open_storage(s3_base)
    files = [f"city=sf/f{n:04d}.parquet" for n in range(S3_DELETE_BATCH + 5)]
    client, prefix = s3_endpoint.client(), s3_endpoint.key(s3_base)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda rel: client.put_object(Bucket=s3_endpoint.bucket, Key=f"{prefix}/{rel}", Body=b"x"),
                      files))
    kept = "city=sf/kept.parquet"
    client.put_object(Bucket=s3_endpoint.bucket, Key=f"{prefix}/{kept}", Body=b"x")
    calls = _counting(storage, monkeypatch)

    assert sorted(storage.delete_many(files)) == sorted(files)

    assert calls == ["delete_objects", "delete_objects"]
    assert s3_endpoint.keys(prefix + "/") == [f"{prefix}/{kept}"]


def test_batch_delete_refuses_a_path_outside_the_table_before_any_request(s3_base, monkeypatch):
    storage = open_storage(s3_base)
    calls = _counting(storage, monkeypatch)
    with pytest.raises(PathOutsideTableError):
        storage.delete_many(["city=sf/a.parquet", "../other-table/city=sf/b.parquet"])
    assert calls == []
