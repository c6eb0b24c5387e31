"""Memory bandwidth across transfer sizes: copy, read, write and triad (STREAM's convention)."""

from parity.model.family import Family

FAMILY = Family(name="membw", suite="parity.families.membw.suite:MembwSuite", view="parity.families.membw.views:VIEW",
                description="memory bandwidth across transfer sizes", order=1)
