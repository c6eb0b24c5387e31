"""Trace readers: one module per profiler format, each producing an ActivityTable.

Use :func:`parity.trace.load.load_trace`, which detects the format; the readers are public for
callers that know what they have (``read_kineto``, ``read_ascend_text``, ``read_ascend_db``,
``read_nsys``); ``load_trace`` then gives every row its step (:mod:`parity.trace.steps`).
"""
