"""The benchmark families, one folder each: its options, its suite (the cases and the work
each declares), its summary and figures, and its views.

A family never times anything itself (``parity.timing`` does, through the harness) and never
writes to the store (the runner does). Importing this package imports no family.
"""
