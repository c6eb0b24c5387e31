"""Benchmarks declare their work; the runner times nothing itself but walks, stores and summarises.

``parity.harness.registry`` finds suites by name (built-ins imported lazily, plugins through the
``parity.suites`` entry points or ``$PARITY_PLUGINS``); ``parity.harness.runner.run_suites`` runs
them into the results store. Importing this package imports neither torch nor any suite.
"""
