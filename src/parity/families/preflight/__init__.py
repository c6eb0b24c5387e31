"""The link preflight: point-to-point bandwidth and latency between every pair of ranks, per
link (pair of nodes), naming the slow one."""

from parity.model.family import Family

FAMILY = Family(name="preflight", suite="parity.families.preflight.suite:PreflightSuite",
                description="link preflight: p2p bandwidth and latency per pair, the slow link named",
                view="parity.families.preflight.views:VIEW", order=3)
