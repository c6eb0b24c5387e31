"""Communication overlapped with compute: together and alone, and the overlap achieved."""

from parity.model.family import Family

FAMILY = Family(name="overlap", suite="parity.families.overlap.suite:OverlapSuite",
                description="communication overlapped with compute",
                view="parity.families.overlap.views:VIEW", order=5)
