"""Folder listings on a remote store are made several at a time (a listing waits on the network: a page's 200
listings one after another take seconds on S3), their results taken in order, with a bounded number ahead."""
from __future__ import annotations

import threading

import pytest

from tms.hudi.fs_view import partitions
from tms.hudi.fs_view.partitions import listed_in_order, sample_partition_folders
from tms.hudi.storage.table_storage import FileInfo, LocalStorage

METAFILE = partitions.PARTITION_METAFILE


class SlowStore:
    """A remote store's listings: the first (the base path's excepted) waits, up to 5 s, until another is in
    flight: listings made one after another wait alone (counted, and the test fails). Records how many were in
    flight at most."""

    def __init__(self, folders: dict[str, list[str]]):
        self.folders = folders
        self.lock = threading.Lock()
        self.in_flight = self.most = self.calls = 0
        self.another = threading.Event()
        self.waited_alone = 0

    def names(self, rel: str) -> list[str]:
        return [f.name for f in self.listdir(rel)]

    def listdir(self, rel: str) -> list[FileInfo]:
        with self.lock:
            self.in_flight += 1
            self.calls += 1
            self.most = max(self.most, self.in_flight)
            if self.in_flight > 1:
                self.another.set()
        try:
            if rel and not self.another.wait(5):
                self.waited_alone += 1
                self.another.set()  # once is enough to fail
            return [FileInfo(n, f"{rel}/{n}" if rel else n, 1, None, n not in (METAFILE, "f.parquet"))
                    for n in self.folders[rel]]
        finally:
            with self.lock:
                self.in_flight -= 1


def test_listings_of_a_remote_store_are_made_together_and_taken_in_order():
    folders = {f"p{n:03d}": ["f.parquet"] for n in range(100)}
    store = SlowStore(folders)
    listed = list(listed_in_order(store, store.listdir, sorted(folders)))  # type: ignore[arg-type]
    assert [rel for rel, _ in listed] == sorted(folders)
    assert all(files[0].path == f"{rel}/f.parquet" for rel, files in listed)
    assert store.waited_alone == 0 and 1 < store.most <= partitions.LISTING_THREADS


def test_a_sample_of_a_remote_tables_partitions_lists_them_together():
    folders = {"": [f"p{n:03d}" for n in range(60)], **{f"p{n:03d}": [METAFILE, "f.parquet"] for n in range(60)}}
    store = SlowStore(folders)
    found = sample_partition_folders(store, 200)  # type: ignore[arg-type]
    assert found.complete and found.listing.partitions == sorted(k for k in folders if k)
    assert store.waited_alone == 0 and store.most > 1


def test_a_local_disk_is_listed_one_folder_after_another(tmp_path, monkeypatch):
    for n in range(3):
        (tmp_path / f"p{n}").mkdir()
    storage = LocalStorage(str(tmp_path))
    seen: list[str] = []

    def listing(rel: str) -> list[FileInfo]:
        seen.append(threading.current_thread().name)
        return storage.listdir(rel)
    assert [rel for rel, _ in listed_in_order(storage, listing, ["p0", "p1", "p2"])] == ["p0", "p1", "p2"]
    assert set(seen) == {threading.current_thread().name}


@pytest.mark.parametrize("error_at", [0, 50])
def test_a_failed_listing_is_raised_to_the_caller(error_at):
    store = SlowStore({f"p{n:03d}": [] for n in range(100)})
    store.another.set()

    def listing(rel: str) -> list[FileInfo]:
        if rel == f"p{error_at:03d}":
            raise OSError(f"cannot list {rel}")
        return store.listdir(rel)
    with pytest.raises(OSError, match=f"cannot list p{error_at:03d}"):
        list(listed_in_order(store, listing, sorted(store.folders)))  # type: ignore[arg-type]
