"""The timing strategies a ``Work`` may name, and the clocks that are bookkeeping, for families.

A family declares its protocol through the harness and never imports ``parity.timing`` itself:
``Work(call=..., strategy=TwoLengthSlope(...))`` is timed by ``parity.harness.measure`` like any
other declared work. Each strategy is defined, and documented, in its ``parity.timing`` module:

- ``ReplayFallback``: CUDA graph replay, eager with a ``graph-failed`` finding where capture fails;
- ``PairedRounds``: a candidate and its baseline in alternated rounds (A/B);
- ``CallsPerSample``: several back-to-back calls per sample, each sample divided by their count;
- ``TwoLengthSlope``: a chase timed at two chain lengths, the slope per load;
- ``BestOf``: the best of a few timed calls (a probe that sizes the next measurement);
- ``TogetherAndAlone``: the work alone, a companion alone, and both at once, on every rank;
- ``ForDuration``: the work repeated for a wall-clock duration, every iteration's start stamped.

The clocks never make a sample: ``Stopwatch`` (a build's cost, progress), ``SearchClock`` (a
search's budget, the device's cache flushes left out), ``StreamClock`` (an online client's
stamps of one streamed request) and ``LoopMeter`` (a load generator's send schedule and its own
load).
"""

from parity.timing.calls_per_sample import CallsPerSample
from parity.timing.clock import SearchClock, Stopwatch
from parity.timing.duration import ForDuration
from parity.timing.fallback import ReplayFallback
from parity.timing.loop_load import LoopMeter
from parity.timing.paired import PairedRounds
from parity.timing.probe import BestOf
from parity.timing.slope import TwoLengthSlope
from parity.timing.stream import StreamClock
from parity.timing.together import TogetherAndAlone

__all__ = ["BestOf", "CallsPerSample", "ForDuration", "LoopMeter", "PairedRounds", "ReplayFallback", "SearchClock", "Stopwatch", "StreamClock",
           "TogetherAndAlone", "TwoLengthSlope"]
