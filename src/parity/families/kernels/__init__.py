"""The kernels family: DeepSeek's kernel libraries (FlashMLA, DeepGEMM, ...) timed against torch references."""

from parity.model.family import Family

FAMILY = Family(name="kernels", suite="parity.families.kernels.suite:KernelsSuite",
                view="parity.families.kernels.views:VIEW", description="DeepSeek's kernel libraries against references", order=7)
