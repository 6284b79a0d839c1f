"""Hudi's record-key bloom filter in base file footers (`org.apache.hudi.bloomfilter`, type DYNAMIC_V0).

Java writers add every record key of a base file to a bloom filter and store it, serialized and base64
encoded, in the parquet footer; the BLOOM index of later upserts reads it to find the file group of a key
and fails on a base file without one. The filter is Hudi's InternalDynamicBloomFilter (a copy of
Hadoop's DynamicBloomFilter bounded to `max_entries`): rows of `num_entries` keys each, every row a
Hadoop BloomFilter of `vector_size` bits set by `num_hashes` chained MurmurHash (Hadoop's variant)
values. Hashing is vectorised with numpy over the keys of one byte length at a time."""
from __future__ import annotations

import base64
import math
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

FOOTER_KEY = b"org.apache.hudi.bloomfilter"
TYPE_CODE_KEY = b"hoodie_bloom_filter_type_code"
DYNAMIC_V0 = b"DYNAMIC_V0"

# Hudi's defaults: hoodie.index.bloom.num_entries, hoodie.index.bloom.fpp,
# hoodie.bloom.index.filter.dynamic.max.entries.
NUM_ENTRIES = 60_000
FALSE_POSITIVE_RATE = 0.000000001
MAX_ENTRIES = 100_000

_M = np.uint32(0x5BD1E995)
_FILTER_VERSION = -1
_MURMUR_HASH = 1  # Hadoop's Hash.MURMUR_HASH
_BATCH = 1 << 16


def vector_size(num_entries: int = NUM_ENTRIES, fpp: float = FALSE_POSITIVE_RATE) -> int:
    return math.ceil(num_entries * (-math.log(fpp) / (math.log(2) ** 2)))


def num_hashes(bits: int, num_entries: int = NUM_ENTRIES) -> int:
    return math.ceil(math.log(2) * bits / num_entries)


def murmur_positions(keys: pa.Array, bits: int, hashes: int) -> np.ndarray:
    """(hashes, len(keys)) bit positions: Hadoop's HashFunction over the keys' UTF-8 bytes."""
    keys = pc.cast(keys, pa.large_binary()) if not pa.types.is_large_binary(keys.type) else keys
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    out = np.empty((hashes, len(keys)), np.int32)
    if len(keys) == 0:
        return out
    _, offsets_buf, data_buf = keys.buffers()
    offsets = np.frombuffer(offsets_buf, np.int64)[keys.offset:keys.offset + len(keys) + 1]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    lengths = np.diff(offsets)
    for length in np.unique(lengths):
        rows = np.nonzero(lengths == length)[0]
        matrix = data[offsets[rows][:, None] + np.arange(length)] if length else np.empty((len(rows), 0), np.uint8)
        out[:, rows] = _positions_of_length(matrix, int(length), bits, hashes)
    return out


def _positions_of_length(matrix: np.ndarray, length: int, bits: int, hashes: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        whole = length // 4
        # The per-4-byte mixing does not depend on the seed: done once for all chained hashes.
        chunks = np.ascontiguousarray(np.ascontiguousarray(matrix[:, :whole * 4]).view("<u4").T)
        chunks *= _M
        chunks ^= chunks >> np.uint32(24)
        chunks *= _M
        # Hadoop's tail, unlike MurmurHash2's C original, puts the first left-over byte highest:
        # 3 bytes a b c give a << 16 ^ b << 8 ^ c. Java bytes are signed: each is sign-extended.
        left = length - whole * 4
        tail = np.zeros(len(matrix), np.uint32)
        for i in range(left):
            signed = matrix[:, whole * 4 + i].astype(np.int8).astype(np.int32) << (8 * (left - 1 - i))
            tail ^= signed.astype(np.uint32)
        out = np.empty((hashes, len(matrix)), np.int32)
        h = np.zeros(len(matrix), np.uint32)  # each hash is seeded with the one before
        scratch = np.empty_like(h)
        for n in range(hashes):
            h ^= np.uint32(length)
            for chunk in chunks:
                h *= _M
                h ^= chunk
            if length % 4:
                h ^= tail
                h *= _M
            np.right_shift(h, 13, out=scratch)
            h ^= scratch
            h *= _M
            np.right_shift(h, 15, out=scratch)
            h ^= scratch
            # Java's Math.abs(h % bits) == |h| % bits (|MIN_VALUE| stays 2^31 as unsigned)
            np.abs(h.view(np.int32), out=scratch.view(np.int32))
            np.remainder(scratch, np.uint32(bits), out=scratch)
            out[n] = scratch
    return out


def _filter_shape(count: int, num_entries: int, max_entries: int) -> tuple[int, int]:
    """The number of rows of a filter holding `count` keys, and the active row's count."""
    rows_cap = max(1, math.ceil(max_entries / num_entries))  # rows are added while rows * entries < max
    filled = min(count, rows_cap * num_entries)
    if count <= filled:
        n_rows = (count - 1) // num_entries + 1 if count else 1
        return n_rows, count - (n_rows - 1) * num_entries
    return rows_cap, num_entries + (count - filled)


def dynamic_bloom_filter(keys: pa.Array, num_entries: int = NUM_ENTRIES, fpp: float = FALSE_POSITIVE_RATE,
                         max_entries: int = MAX_ENTRIES) -> bytes:
    """The footer value (base64 text, as bytes) of a DYNAMIC_V0 filter holding `keys` in write order."""
    builder = DynamicBloomBuilder(num_entries, fpp, max_entries)
    builder.add(keys)
    return builder.serialize()


class DynamicBloomBuilder:
    """A DYNAMIC_V0 filter built from keys added batch by batch (a base file written as it is merged)."""

    def __init__(self, num_entries: int = NUM_ENTRIES, fpp: float = FALSE_POSITIVE_RATE,
                 max_entries: int = MAX_ENTRIES):
        self.num_entries, self.max_entries = num_entries, max_entries
        self.bits = vector_size(num_entries, fpp)
        self.hashes = num_hashes(self.bits, num_entries)
        self.rows_cap = max(1, math.ceil(max_entries / num_entries))
        self.vectors = np.zeros((self.rows_cap, self.bits), np.bool_)
        self.count = 0

    def add(self, keys: pa.Array | pa.ChunkedArray) -> None:
        keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
        flat = self.vectors.reshape(-1)
        for start in range(0, len(keys), _BATCH):  # bounded memory: positions of one batch at a time
            part = keys.slice(start, _BATCH)
            rows = _rows_of(np.arange(self.count, self.count + len(part)), self.num_entries, self.rows_cap)
            positions = murmur_positions(part, self.bits, self.hashes)
            flat[(positions + rows * self.bits).reshape(-1)] = True
            self.count += len(part)

    def serialize(self) -> bytes:
        n_rows, active_count = _filter_shape(self.count, self.num_entries, self.max_entries)
        header = struct.pack(">iibi", _FILTER_VERSION, self.hashes, _MURMUR_HASH, self.bits)
        parts = [header, struct.pack(">iii", self.num_entries, active_count, n_rows)]
        for vector in self.vectors[:n_rows]:
            parts += [header, np.packbits(vector, bitorder="little").tobytes()]
        return base64.b64encode(b"".join(parts))


def _rows_of(index: np.ndarray, num_entries: int, rows_cap: int) -> np.ndarray:
    """The filter row of the keys added at positions `index`: rows fill in turn; once all are full, the first
    extra key goes to row 0, then the rows take turns."""
    filled = rows_cap * num_entries
    extra = index - filled
    return np.where(index < filled, index // num_entries, np.where(extra <= 0, 0, (extra - 1) % rows_cap))


def _rows(serialized: bytes) -> tuple[int, int, list[np.ndarray]]:
    """The bit count, hash count and bit vectors (one per row) of a serialized DYNAMIC_V0 filter."""
    raw = base64.b64decode(serialized)
    _, hashes, _, bits = struct.unpack_from(">iibi", raw, 0)
    _, _, n_rows = struct.unpack_from(">iii", raw, 13)
    offset, row_bytes = 25, (bits + 7) // 8
    vectors = []
    for _ in range(n_rows):
        vectors.append(np.unpackbits(np.frombuffer(raw, np.uint8, row_bytes, offset + 13), bitorder="little"))
        offset += 13 + row_bytes
    return bits, hashes, vectors


def keys_not_contained(serialized: bytes, keys: pa.Array) -> np.ndarray:
    """Indices of the `keys` a serialized DYNAMIC_V0 filter does not contain: a filter's false negatives,
    which make Hudi's BLOOM index miss a key and write it twice. Empty for a correct filter."""
    bits, hashes, vectors = _rows(serialized)
    found = np.zeros(len(keys), np.bool_)
    for start in range(0, len(keys), _BATCH):
        positions = murmur_positions(keys.slice(start, _BATCH), bits, hashes)
        batch = found[start:start + positions.shape[1]]
        for vector in vectors:  # a key is in the filter when any row holds all its bits
            batch |= vector[positions].all(axis=0)
    return np.nonzero(~found)[0]


def might_contain(serialized: bytes, key: str) -> bool:
    """Membership test of a serialized DYNAMIC_V0 filter (any row holds all the key's bits)."""
    return len(keys_not_contained(serialized, pa.array([key]))) == 0
