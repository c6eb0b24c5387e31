"""Statistics derived from raw samples: medians, IQR, bootstrap CIs, ratios, self-checks."""

from parity.stats.checks import check_samples
from parity.stats.summary import (
    Summary,
    bootstrap_ci,
    iqr,
    median,
    percentile,
    ratio_ci,
    summarize,
    tukey_outliers,
)

__all__ = [
    "Summary",
    "bootstrap_ci",
    "check_samples",
    "iqr",
    "median",
    "percentile",
    "ratio_ci",
    "summarize",
    "tukey_outliers",
]
