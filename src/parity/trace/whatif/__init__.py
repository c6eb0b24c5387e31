"""What-if predictions from traces: "if this kind of work ran k times faster, how fast a step?"

Three methods (docs/definitions.md, What-if): the first order, bounds consistent with the trace, and a
replay of a dependency graph built from the trace. Start with :func:`predict`.
"""

from parity.trace.whatif.prediction import Prediction, predict
from parity.trace.whatif.selection import Scale, parse_scale

__all__ = ["Prediction", "Scale", "parse_scale", "predict"]
