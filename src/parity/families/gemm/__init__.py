"""The GEMM family: catalog shapes, the measured ceilings, roofline efficiency, correctness."""

from parity.model.family import Family

FAMILY = Family(name="gemm", suite="parity.families.gemm.suite:GemmSuite", description="GEMM sweeps: measured ceilings, roofline efficiency, tuned backends", order=0,
                view="parity.families.gemm.views:VIEW")
