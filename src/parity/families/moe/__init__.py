"""MoE dispatch and combine over all_to_all with uneven splits (DeepEP's presets)."""

from parity.model.family import Family

FAMILY = Family(name="moe", suite="parity.families.moe.suite:MoeSuite",
                description="MoE dispatch and combine",
                view="parity.families.moe.views:VIEW", order=4)
