"""The shapes msgspec decodes Chrome-trace events into: only what the Kineto reader uses.

An event's ``ph`` picks its struct (a tagged union): complete (``X``), metadata (``M``) and
duration (``B``/``E``) events decode their fields; every other phase (flow, instant, counter,
async...) decodes into an empty struct, so its keys and ``args`` are skipped without building
any value. This is most of what makes the struct path fast: a Kineto trace is about 40% flow
and instant events. An event whose ``ph`` is missing or not a Chrome-trace phase fails the
decoder, and its block is decoded again as :class:`Loose` events (:mod:`.jsonstream`).

``ts`` is kept as the JSON text of the value (``msgspec.Raw``) and converted exactly by
:mod:`.rawtimes`: Kineto writes microseconds such as ``1712195495519689.047``, which a float64
holds only to a quarter of a microsecond. A block that does not fit these types (a generic or
damaged trace) is decoded into :class:`Loose` events instead, whose values are checked by the
scan.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec

from parity.trace.table import NO_ID

Int = int | None
IntStr = int | str | None
IntText = int | str  # ROCm's runtime calls give ``args.stream`` as text ("0x0"): NO_ID, as in a dict
ABSENT = -(2**63)  # decoded value of an absent ``External id``: tells it from an explicit -1
# Chrome trace phases with nothing the reader uses (the current ones and the deprecated async
# ``S``/``T``/``p``/``F``)
OTHER_PHASES = ("s", "t", "f", "i", "I", "C", "b", "n", "e", "S", "T", "p", "F", "P", "N", "O", "D",
                "R", "c", "v", "V", "(", ")")  # fmt: skip


class Args(msgspec.Struct, gc=False):
    """The ``args`` keys the reader uses; all others are skipped while decoding.

    Absent ids decode as NO_ID (``External id`` as :data:`ABSENT`, as the older key may stand
    in for it), so columns need no per-value fix-up. They are integers, or for ``device``,
    ``stream`` and ``correlation`` text, which the scan turns into NO_ID as it does in a dict
    (ROCm traces give every runtime call's stream as ``"0x0"``): a block where one is ``null``
    or a float (no profiler writes that) fails the decoder and is read as dicts.
    """

    device: IntText = NO_ID
    stream: IntText = NO_ID
    correlation: IntText = NO_ID
    external_id: int = msgspec.field(default=ABSENT, name="External id")
    external_id_old: Int = msgspec.field(default=None, name="external id")
    cuda_sync_kind: str | None = None
    sync_type: str | None = None
    wait_on_stream: Int = None
    wait_on_cuda_event_record_corr_id: Int = None


NO_ARGS = Args()


class Complete(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
    """A complete (``ph: X``) event: one row."""

    cat: str | None = None
    name: str | None = None
    pid: IntStr = None
    tid: IntStr = None
    ts: msgspec.Raw = msgspec.Raw()
    dur: float | str | None = None
    args: Args | None = None


class LaneArgs(msgspec.Struct, gc=False):
    """The ``args`` of a metadata event that name a lane."""

    name: str | None = None  # process/thread name
    labels: str | None = None  # process labels


class Metadata(msgspec.Struct, gc=False, tag_field="ph", tag="M"):
    """A metadata event (process and thread names): only what names a lane, so the many
    repeated metadata events of some profilers cost little."""

    name: str | None = None
    pid: IntStr = None
    tid: IntStr = None
    args: LaneArgs | None = None


class Begin(Complete, tag="B"):
    """The start of a duration event."""


class End(Complete, tag="E"):
    """The end of a duration event."""


class Loose(msgspec.Struct, gc=False):
    """Any event of a block that does not fit the types above, every value as decoded (``ts``
    as JSON text); the entries of the array that are not objects decode as themselves."""

    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: msgspec.Raw = msgspec.Raw()
    dur: Any = None
    args: Any = None


_SKIPPED = tuple(
    msgspec.defstruct(f"Phase{ord(ph)}", [], gc=False, tag_field="ph", tag=ph) for ph in OTHER_PHASES
)
BEGIN_END = {Begin: "B", End: "E"}
DECODER = msgspec.json.Decoder(list[Union[(Complete, Metadata, Begin, End, *_SKIPPED)]])
LOOSE_DECODER = msgspec.json.Decoder(list[Union[Loose, None, bool, int, float, str, list]])
STRUCT_TYPES = frozenset((Complete, Metadata, *BEGIN_END, *_SKIPPED))
