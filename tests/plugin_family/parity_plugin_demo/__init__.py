"""A demo family from outside parity: sums of floats on the CPU, found by its entry point
(``demo = "parity_plugin_demo:FAMILY"`` in the ``parity.families`` group)."""

from parity.model.family import Family

FAMILY = Family(name="demo", suite="parity_plugin_demo.suite:DemoSuite", view="parity_plugin_demo.views:VIEW",
                description="sums of floats on the CPU (a family from another package)", order=50)
