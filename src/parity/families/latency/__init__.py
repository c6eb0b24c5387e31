"""Memory latency by pointer chase, against working-set size and concurrent chains."""

from parity.model.family import Family

FAMILY = Family(name="latency", suite="parity.families.latency.suite:LatencySuite", view="parity.families.latency.views:VIEW",
                description="pointer-chase latency against working set and concurrent chains", order=2)
