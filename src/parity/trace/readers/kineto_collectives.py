"""The NCCL arguments of a Kineto trace's collectives, read only from the blocks that hold some.

PyTorch writes ``Collective name``, ``In msg nelems``, ``Out msg nelems``, ``dtype``, ``Process
Group Name``, ``Process Group Ranks``, ``Group size``, ``In split size`` and ``Out split size`` on
collective kernels and ``record_param_comms`` ops. The block decoder's ``args`` struct has one
field for them, ``Collective name``, typed :class:`CollectiveMark`: msgspec hands such a value to
the decoding hook (:meth:`Marks.hook`), which notes that the block holds a collective; only
such a block is decoded a second time for the nine arguments (:func:`with_collectives`). One
field more in the struct costs a trace ~1% of its decoding time, nine fields ~4% (every
unknown key is compared with every field), so traces without collectives stay as quick.

The arguments become sparse extra columns (:data:`COLLECTIVE`, ``ActivityTable``'s docstring):
counts as int64 (``NO_ID`` where absent), the rest as text, None where absent.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec
import numpy as np

from parity.trace.readers.columns import int_or
from parity.trace.table import NO_ID

COLLECTIVE = dict(collective_name=object, in_msg_nelems=np.int64, out_msg_nelems=np.int64, dtype=object,
                  process_group_name=object, process_group_ranks=object, group_size=np.int64,
                  in_split_size=object, out_split_size=object)  # fmt: skip


class CollectiveMark:
    """What an event's ``Collective name`` decodes to in the block decoder: nothing kept, the
    block marked (module docstring)."""

    __slots__ = ()


class Marks(list):
    """Set by the decoding hook while a block is decoded: non-empty when some event carried a
    ``Collective name`` (a reader decodes one block at a time per process)."""

    def hook(self, kind: type, value: Any) -> CollectiveMark:
        """Note the collective; the value the field holds is the one :data:`MARK` (the decoder
        checks that a hook returns the field's type: a None here would fail the whole block
        over to the loose decoder, event by event in Python)."""
        if kind is not CollectiveMark:
            raise NotImplementedError(kind)
        self.append(True)
        return MARK


marked = Marks()
MARK = CollectiveMark()


class CollectiveArgs(msgspec.Struct, gc=False):
    """The NCCL arguments of one event (:data:`COLLECTIVE`), as decoded."""

    collective_name: Any = msgspec.field(default=None, name="Collective name")
    in_msg_nelems: Any = msgspec.field(default=None, name="In msg nelems")
    out_msg_nelems: Any = msgspec.field(default=None, name="Out msg nelems")
    dtype: Any = None
    process_group_name: Any = msgspec.field(default=None, name="Process Group Name")
    process_group_ranks: Any = msgspec.field(default=None, name="Process Group Ranks")
    group_size: Any = msgspec.field(default=None, name="Group size")
    in_split_size: Any = msgspec.field(default=None, name="In split size")
    out_split_size: Any = msgspec.field(default=None, name="Out split size")


class CollectiveEvent(msgspec.Struct, gc=False):
    """Any entry of a block with collectives, decoded again for its NCCL arguments only."""

    args: CollectiveArgs | None | bool | int | float | str | list = None


class Block(list):
    """A block's events and, in ``collective``, each event's :class:`CollectiveArgs` (None for
    an event without a ``Collective name``)."""

    __slots__ = ("collective",)


COLLECTIVE_DECODER = msgspec.json.Decoder(list[Union[CollectiveEvent, None, bool, int, float, str, list]])


def with_collectives(events: list, text) -> Block:
    """``events`` as a :class:`Block` with their NCCL arguments, ``text`` decoded again."""
    block = Block(events)
    again = COLLECTIVE_DECODER.decode(text)
    block.collective = [e.args if type(e) is CollectiveEvent and type(e.args) is CollectiveArgs
                        and e.args.collective_name is not None else None for e in again]  # fmt: skip
    return block


def collective_columns(args: list[CollectiveArgs | None]) -> dict[str, np.ndarray]:
    """The :data:`COLLECTIVE` columns of a block's rows (one :class:`CollectiveArgs` or None each):
    counts as int64 (``NO_ID`` where absent), the rest as text (a list of ranks or split sizes
    written ``"[0, 1]"``, as PyTorch writes it), None where absent. Only the rows with
    arguments are looked at (a few collectives among thousands of kernels); the others keep
    the fill."""
    present = [i for i, a in enumerate(args) if a is not None]
    held = [args[i] for i in present]
    out = {}
    for key, dtype in COLLECTIVE.items():
        values = [getattr(a, key) for a in held]
        if dtype is object:
            column = np.full(len(args), None, dtype=object)
            texts = np.empty(len(held), dtype=object)
            texts[:] = [arg_text(v) for v in values]
            column[present] = texts
        else:
            column = np.full(len(args), NO_ID, dtype=np.int64)
            column[present] = [int_or(v) for v in values]
        out[key] = column
    return out


def arg_text(value) -> str | None:
    """An argument as text: a string as it is, an integer in decimal, a list as ``"[a, b]"``."""
    if value is None or type(value) is str:
        return value
    if type(value) is list:
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value) if type(value) is int else None
