"""The one exception type the command line turns into a one-line message."""

from __future__ import annotations


class ParityError(Exception):
    """A user-facing error: one lowercase line naming the offending value and what to do.

    The CLI prints ``parity: <message>`` and exits with status 2; it never shows a traceback
    for this type. Raise it for bad input, unknown devices, unreadable files and the like.
    """
