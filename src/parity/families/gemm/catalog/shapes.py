"""The GEMM shape catalog: exactly 1,055 distinct (M, N, K) shapes built from rules.

Families, in the order they are built (a shape another family already holds keeps its first
name and origin, so every shape appears once):

- ``llm``: projection shapes of real LLMs (``models.py``) with tensor-parallel shards, for
  every token count from 1 to 16,384;
- ``square``: ``n x n x n`` from 64 to 16,384 (powers of two, their 1.5x midpoints and every
  multiple of 1024);
- ``m-sweep`` / ``n-sweep``: one dimension over 1..32,768 at 4096 for the other two;
- ``k-sweep``: long reductions (K up to 262,144) at M = N = 1024, 2048 and 4096;
- ``aspect``: every combination of 128, 1024, 8192 and 32768 for (M, N, K) with M·N·K <= 2^36;
- ``unaligned``: odd, prime and 2^k±1 sizes, alone and against aligned ones.

The catalog is data: change a rule and ``CATALOG_VERSION`` must change (a test pins the
catalog's hash to its version).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Any

from parity.families.gemm.catalog.models import DEPLOYMENTS, TOKEN_COUNTS

CATALOG_VERSION = 1
CATALOG_SIZE = 1055
FAMILIES = ("llm", "square", "m-sweep", "n-sweep", "k-sweep", "aspect", "unaligned", "user")


@dataclass(frozen=True, kw_only=True)
class Shape:
    """One GEMM ``C[M,N] = A[M,K] @ B[K,N]`` with a stable ``name``, its ``family`` and ``origin``."""

    m: int
    n: int
    k: int
    name: str
    family: str
    origin: str

    @property
    def dims(self) -> tuple[int, int, int]:
        return self.m, self.n, self.k

    @property
    def flops(self) -> int:
        """``2·M·N·K`` FLOP (see ``parity.metrics.roofline.gemm_flops``)."""
        return 2 * self.m * self.n * self.k

    def to_dict(self) -> dict[str, Any]:
        return {"m": self.m, "n": self.n, "k": self.k, "name": self.name,
                "family": self.family, "origin": self.origin}


def _llm() -> list[Shape]:
    out = []
    for projections, tps in DEPLOYMENTS:
        for tp in tps:
            for proj in projections:
                n, k = proj.shard(tp)
                shard = f".tp{tp}" if proj.split != "none" and tp > 1 else ""
                for tokens in TOKEN_COUNTS:
                    out.append(Shape(
                        m=tokens, n=n, k=k, family="llm",
                        name=f"{proj.model}{shard}.{proj.layer}.t{tokens}",
                        origin=f"{proj.model} {proj.layer} ({proj.split}-parallel, tp={tp}), {tokens} tokens",
                    ))
    return out


# Powers of two from 64, their 1.5x midpoints, and every multiple of 1024 up to 16,384.
SQUARE_SIZES = tuple(sorted({64 * 2**i for i in range(9)} | {96 * 2**i for i in range(8)}
                            | {1024 * j for j in range(1, 17)}))


def _square() -> list[Shape]:
    return [Shape(m=s, n=s, k=s, family="square", name=f"square.{s}", origin=f"square {s}")
            for s in SQUARE_SIZES]


SWEEP_POINTS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768,
                1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768)


def _sweeps() -> list[Shape]:
    out = []
    for v in SWEEP_POINTS:
        out.append(Shape(m=v, n=4096, k=4096, family="m-sweep", name=f"msweep.m{v}",
                         origin=f"M sweep at N=K=4096, M={v}"))
    for v in SWEEP_POINTS:
        out.append(Shape(m=4096, n=v, k=4096, family="n-sweep", name=f"nsweep.n{v}",
                         origin=f"N sweep at M=K=4096, N={v}"))
    return out


LONG_K = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144)


def _k_sweep() -> list[Shape]:
    return [Shape(m=mn, n=mn, k=k, family="k-sweep", name=f"ksweep.mn{mn}.k{k}",
                  origin=f"long-K sweep at M=N={mn}, K={k}")
            for mn in (1024, 2048, 4096) for k in LONG_K]


ASPECT_SIDES = (128, 1024, 8192, 32768)
ASPECT_MAX_MNK = 2**36


def _aspect() -> list[Shape]:
    return [Shape(m=m, n=n, k=k, family="aspect", name=f"aspect.{m}x{n}x{k}",
                  origin=f"aspect-ratio grid M={m} N={n} K={k}")
            for m in ASPECT_SIDES for n in ASPECT_SIDES for k in ASPECT_SIDES
            if m * n * k <= ASPECT_MAX_MNK]


# Largest prime below 2^k for k = 6..14, and 2^k - 1, 2^k + 1 for k = 6..14.
PRIMES = (61, 127, 251, 509, 1021, 2039, 4093, 8191, 16381)
POW2_NEIGHBOURS = tuple(v for k in range(6, 15) for v in (2**k - 1, 2**k + 1))
ODD_TOKENS = (3, 5, 7, 9, 13, 15, 17, 31, 33, 63, 65, 100, 127, 129, 255, 257, 333, 511, 513, 1000,
              1023, 1025, 2047, 2049, 3000, 4095, 4097, 5000, 8191, 8193, 10000, 16383)


def _unaligned() -> list[Shape]:
    out = []
    for v in PRIMES + POW2_NEIGHBOURS:
        kind = "prime" if v in PRIMES else "2^k±1"
        out.append(Shape(m=v, n=v, k=v, family="unaligned", name=f"unaligned.cube{v}",
                         origin=f"{kind} cube {v}"))
    for v in PRIMES + POW2_NEIGHBOURS:
        kind = "prime" if v in PRIMES else "2^k±1"
        out.append(Shape(m=4096, n=4096, k=v, family="unaligned", name=f"unaligned.k{v}",
                         origin=f"{kind} K={v} at M=N=4096"))
        out.append(Shape(m=4096, n=v, k=4096, family="unaligned", name=f"unaligned.n{v}",
                         origin=f"{kind} N={v} at M=K=4096"))
    for m in ODD_TOKENS:
        for n, k, label in ((4096, 4096, "llama3-8b o_proj"), (14336 * 2, 4096, "llama3-8b gate_up_proj"),
                            (7168, 2048, "deepseek-v3 expert_down_proj")):
            out.append(Shape(m=m, n=n, k=k, family="unaligned", name=f"unaligned.{m}x{n}x{k}",
                             origin=f"odd token count {m} through {label}"))
    for i, (m, n, k) in enumerate(zip(PRIMES, reversed(PRIMES), PRIMES[3:] + PRIMES[:3])):
        out.append(Shape(m=m, n=n, k=k, family="unaligned", name=f"unaligned.primes{i}",
                         origin=f"all-prime {m}x{n}x{k}"))
    return out


def _dedupe(shapes: list[Shape]) -> list[Shape]:
    seen: set[tuple[int, int, int]] = set()
    out = []
    for shape in shapes:
        if shape.dims not in seen:
            seen.add(shape.dims)
            out.append(shape)
    return out


@functools.lru_cache(maxsize=1)
def _catalog() -> tuple[Shape, ...]:
    shapes = _dedupe(_llm() + _square() + _sweeps() + _k_sweep() + _aspect() + _unaligned())
    if len(shapes) != CATALOG_SIZE:
        raise AssertionError(f"catalog v{CATALOG_VERSION} has {len(shapes)} shapes, not {CATALOG_SIZE}")
    return tuple(shapes)


def catalog() -> list[Shape]:
    """The catalog, in a fixed order (family, then rule order)."""
    return list(_catalog())


def catalog_digest(shapes: list[Shape] | None = None) -> str:
    """SHA-256 over ``m,n,k,name,family`` lines: what a test pins to ``CATALOG_VERSION``."""
    lines = "".join(f"{s.m},{s.n},{s.k},{s.name},{s.family}\n" for s in (shapes or catalog()))
    return hashlib.sha256(lines.encode()).hexdigest()
