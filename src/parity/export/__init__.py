"""Measured inputs for simulators: α-β fits from stored runs, written in ASTRA-sim's, Calculon's
and Vidur's formats with the runs' provenance beside them."""
