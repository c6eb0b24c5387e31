"""Collectives on N ranks: time as the max over ranks, algbw and busbw by nccl-tests' factors."""

from parity.model.family import Family

FAMILY = Family(name="collectives", suite="parity.families.collectives.suite:CollectivesSuite",
                description="collectives over N ranks",
                view="parity.families.collectives.views:VIEW", order=3)
