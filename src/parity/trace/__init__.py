"""parity.trace: read profiler traces into one columnar table and analyse them (no torch).

    from parity.trace import load_trace, analyze
    result = analyze(load_trace(["rank0.json.gz"]))
    result.first.streams[0].busy_fraction
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from parity.trace.analysis import analyze
from parity.trace.ascend_steps import AscendStep, ascend_steps
from parity.trace.categories import (
    STANDARD_CATEGORIES,
    Categorization,
    Rules,
    categorize,
    load_rules,
)
from parity.trace.intervals import IntervalSet
from parity.trace.results import (
    BlockStats,
    CategoryStats,
    CommOverlap,
    DeviceStats,
    KernelStats,
    RankAnalysis,
    RankSpread,
    StreamOverlap,
    StreamStats,
    TraceAnalysis,
)
from parity.trace.table import ActivityTable, Kind
from parity.trace.window import Window, choose_window

if TYPE_CHECKING:
    from parity.trace.load import load_trace

__all__ = [
    "ActivityTable", "AscendStep", "BlockStats", "Categorization", "CategoryStats", "CommOverlap",
    "DeviceStats", "IntervalSet", "KernelStats", "Kind", "RankAnalysis", "RankSpread", "Rules",
    "STANDARD_CATEGORIES", "StreamOverlap", "StreamStats", "TraceAnalysis", "Window", "analyze",
    "ascend_steps", "categorize", "choose_window", "load_rules", "load_trace",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    # the readers import lazily so `import parity.trace` stays cheap and never cycles
    if name == "load_trace":
        from parity.trace.load import load_trace

        return load_trace
    raise AttributeError(f"module 'parity.trace' has no attribute {name!r}")
