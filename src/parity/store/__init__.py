"""The embedded results store (SQLite) and its exports (JSON, CSV, Parquet).

Open it with :meth:`Store.open`; the path is ``--db``, else ``$PARITY_DB``, else
``results.sqlite`` in the user's data directory. Every case is committed as soon as it is added,
and every figure a suite derives is a row of its own (:class:`StoredFigure`), stored when the
suite is summarised: what export and compare read.
"""

from parity.store.database import CaseCounts, Store, default_path, new_run_id
from parity.store.export import FORMATS as EXPORT_FORMATS
from parity.store.figures import StoredFigure
from parity.store.schema import STORE_VERSION

__all__ = ["EXPORT_FORMATS", "STORE_VERSION", "CaseCounts", "Store", "StoredFigure", "default_path", "new_run_id"]
