"""The GEMM shape catalog (1,055 shapes, versioned), its quick selection, and user CSV shapes."""

from parity.families.gemm.catalog.quick import QUICK_COUNT, QUICK_MAX_FLOP, quick_selection
from parity.families.gemm.catalog.shapes import (
    CATALOG_SIZE,
    CATALOG_VERSION,
    FAMILIES,
    Shape,
    catalog,
    catalog_digest,
)
from parity.families.gemm.catalog.user import load_user_shapes

__all__ = [
    "CATALOG_SIZE",
    "CATALOG_VERSION",
    "FAMILIES",
    "QUICK_COUNT",
    "QUICK_MAX_FLOP",
    "Shape",
    "catalog",
    "catalog_digest",
    "load_user_shapes",
    "quick_selection",
]
