"""The one exception type the command line turns into a one-line message."""

from __future__ import annotations


class ParityError(Exception):
    """A user-facing error: one lowercase line naming the offending value and what to do.

    The CLI prints ``parity: <message>`` and exits with status 2; it never shows a traceback
    for this type. Raise it for bad input, unknown devices, unreadable files and the like. A
    message holding line breaks (another library's error text quoted in it) is joined into one
    line, so the promise holds whoever wrote the text.
    """

    def __init__(self, message: object = "", *args: object) -> None:
        text = str(message)
        if "\n" in text or "\r" in text:
            text = " ".join(part.strip() for part in text.splitlines() if part.strip())
        super().__init__(text, *args)


def one_line(exc: BaseException, limit: int = 160) -> str:
    """An exception's text on one line, shortened: for ParityError messages (always one line)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
