"""Frontier's hashed n-gram embedding (src/reference/ngram.h) in PyTorch, bit for bit.

    import sys; sys.path.insert(0, "python")
    from frontier_ngram import ngram_buckets, ngram_embed
    b = ngram_buckets(idx, 2, 1000)            # idx (B, T) int64 -> (B, T) int64, -1 where t < n-1
    x = ngram_embed(idx, 2, 1000, table)       # table (1000, C) -> (B, T, C), zero rows where t < n-1

The hash, over the n ids of a position, newest first, with 64-bit wrap-around:

    h = 0
    for j in range(n): h = (h ^ (idx[b, t-j] + 1)) * 0x100000001B3    (mod 2**64)
    bucket = (h >> 17) % buckets

torch has no uint64 and its int64 overflow is not defined behaviour, so h is kept as two 32-bit halves in int64
tensors, where every product fits: the prime is 256 * 2**32 + 435, and (hi, lo) * prime mod 2**64 is
lo' = (lo * 435) mod 2**32, hi' = (hi * 435 + lo * 256 + (lo * 435 >> 32)) mod 2**32.

    /usr/bin/python3 python/frontier_ngram.py IDX.i32 B T N BUCKETS OUT.i64
writes ngram_buckets of the (B, T) int32 ids in IDX.i32 as int64 to OUT.i64 (tests/embed_ops_test.cpp).
"""
import sys

import numpy as np
import torch

PRIME_HI, PRIME_LO = 256, 435  # 0x100000001B3 = 256 * 2**32 + 435
MASK32 = (1 << 32) - 1


def ngram_buckets(idx, n, buckets):
    """idx: (B, T) integer tensor of token ids -> (B, T) int64 buckets, -1 where t < n - 1."""
    idx = idx.to(torch.int64)
    B, T = idx.shape
    out = torch.full((B, T), -1, dtype=torch.int64)
    if T < n:
        return out
    L = T - n + 1  # positions t = n-1 .. T-1
    hi = torch.zeros((B, L), dtype=torch.int64)
    lo = torch.zeros((B, L), dtype=torch.int64)
    for j in range(n):
        v = idx[:, n - 1 - j:T - j] + 1  # the id at t - j, +1; as uint64 (sign-extended if negative)
        lo = lo ^ (v & MASK32)
        hi = hi ^ ((v >> 32) & MASK32)
        p = lo * PRIME_LO
        lo, hi = p & MASK32, (hi * PRIME_LO + lo * PRIME_HI + (p >> 32)) & MASK32
    h17 = (hi << 15) | (lo >> 17)  # h >> 17, < 2**47
    out[:, n - 1:] = h17 % buckets
    return out


def ngram_embed(idx, n, buckets, table):
    """idx (B, T), table (buckets, C) -> (B, T, C): table rows of the n-gram buckets, zero rows where t < n-1.
    Differentiable in table (index backward: a scatter-add, as Frontier's)."""
    b = ngram_buckets(idx, n, buckets)
    rows = table[b.clamp(min=0)]
    return rows.masked_fill((b < 0).unsqueeze(-1), 0.0)


def main(argv):
    if len(argv) != 7:
        sys.exit("usage: frontier_ngram.py IDX.i32 B T N BUCKETS OUT.i64")
    B, T, n, buckets = (int(a) for a in argv[2:6])
    idx = torch.from_numpy(np.fromfile(argv[1], dtype=np.int32).astype(np.int64)).reshape(B, T)
    ngram_buckets(idx, n, buckets).numpy().astype(np.int64).tofile(argv[6])


if __name__ == "__main__":
    main(sys.argv)
