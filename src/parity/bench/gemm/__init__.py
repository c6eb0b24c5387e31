"""The GEMM suite: catalog shapes, measured ceilings, roofline efficiency, correctness."""

from parity.bench.gemm.suite import GemmSuite

__all__ = ["GemmSuite"]
