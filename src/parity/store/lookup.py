"""Finding one stored analysis by its id, a unique prefix of it, or its ``latest`` alias."""

from __future__ import annotations

from typing import Any

from parity.model.errors import ParityError
from parity.store.database import Store, latest_back


def find_row(store: Store, *, table: str, columns: str, wanted: str, latest: str, what: str,
             plural: str, hint: str) -> tuple[Any, ...]:
    """The row of ``table`` whose id is ``wanted``, starts with it (when only one does), the
    newest when ``wanted == latest``, or the Nth before it for ``latest~N`` (``fleet:latest~1``,
    as runs' ``latest~1``); otherwise a :class:`ParityError` naming ``what`` (an unknown id, an
    ambiguous prefix, a ``latest~N`` past the oldest) or ``plural`` (none stored), ending with
    ``hint``."""
    back = latest_back(wanted, latest, what=what)
    if back is not None:
        rows = store.query(f"SELECT {columns} FROM {table} ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ?",
                           (back,))
        if not rows and back == 0:
            raise ParityError(f"no {plural} in {store.path} yet; {hint}")
        if not rows:
            held = store.query(f"SELECT count(*) FROM {table}")[0][0]
            raise ParityError(f"{store.path} holds {held} {plural if held != 1 else what}; there is no {wanted}")
        return rows[0]
    rows = store.query(f"SELECT {columns} FROM {table} WHERE id = ?", (wanted,))
    if not rows:
        escaped = wanted.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = store.query(f"SELECT {columns} FROM {table} WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 6",
                           (escaped + "%",))
    if len(rows) == 1:
        return rows[0]
    if rows:
        raise ParityError(f"{what} id {wanted!r} is ambiguous ({', '.join(r[0] for r in rows[:5])}...); "
                          "give more of it")
    raise ParityError(f"no {what} {wanted!r} in {store.path}; {hint}")
