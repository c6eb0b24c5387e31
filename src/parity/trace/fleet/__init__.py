"""parity.trace.fleet: many ranks' traces analysed together, one rank at a time.

The map reads one rank's trace and writes its small summary tables; the reduce matches
collectives across ranks and writes the fleet's figures (arrival skew, waits, stragglers).
Tables and units: :mod:`parity.trace.fleet.tables`.
"""
