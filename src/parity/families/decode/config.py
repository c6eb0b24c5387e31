"""Model configs for the offline decode step: TOML files, shipped or the user's own.

A config names the decoder's shape, nothing else: no weights are read (the layers get seeded
random weights). The shipped ones live in ``parity/data/decode/`` (``tiny``, ``tiny-moe``,
``llama-3-8b``, ``deepseek-v3``); ``--config PATH.toml`` reads a user's file with the same keys.
Every key is checked: an unknown key, a missing one, a value of the wrong type or out of range
is one line naming the file, the key and the value.

Keys (top level): ``name``, ``source``, ``hidden``, ``layers``, ``vocab``, ``rms_eps``,
``rope_theta``, ``accepted_tokens_per_step``; ``[attention]`` with ``type = "gqa"`` (``heads``,
``kv_heads``, ``head_dim``) or ``type = "mla"`` (``heads``, ``q_lora``, ``kv_lora``,
``rope_head``, ``nope_head``, ``v_head``); ``[mlp]`` ``ffn`` (the dense layers' SwiGLU width);
optional ``[moe]`` (``routed_experts``, ``shared_experts``, ``top_k``, ``expert_ffn``,
``first_dense_layers``, ``gate`` softmax|sigmoid, ``groups``, ``top_groups``,
``routed_scaling``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

from parity.model.errors import ParityError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SHIPPED = ("tiny", "tiny-moe", "llama-3-8b", "deepseek-v3")


@dataclass(frozen=True, kw_only=True)
class Attention:
    """``gqa``: ``heads`` query heads sharing ``kv_heads`` K/V heads of ``head_dim``.
    ``mla``: DeepSeek's multi-head latent attention; the cache holds ``kv_lora + rope_head``
    values per token (the latent ``c_kv`` and the shared rope key)."""

    type: str
    heads: int
    kv_heads: int = 0
    head_dim: int = 0
    q_lora: int = 0
    kv_lora: int = 0
    rope_head: int = 0
    nope_head: int = 0
    v_head: int = 0


@dataclass(frozen=True, kw_only=True)
class Moe:
    """Routed experts (``top_k`` of ``routed_experts`` per token) beside ``shared_experts``."""

    routed_experts: int
    shared_experts: int
    top_k: int
    expert_ffn: int
    first_dense_layers: int
    gate: str = "softmax"
    groups: int = 1
    top_groups: int = 1
    routed_scaling: float = 1.0


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """One decoder's shape (see the module docstring); ``origin`` is where it was read from."""

    name: str
    source: str
    hidden: int
    layers: int
    vocab: int
    rms_eps: float
    rope_theta: float
    accepted_tokens_per_step: float
    attention: Attention
    ffn: int
    moe: Moe | None
    origin: str

    def layer_counts(self) -> dict[str, int]:
        """Decoder layers by kind (``dense``, ``moe``) and the one output ``head``."""
        dense = self.layers if self.moe is None else self.moe.first_dense_layers
        counts = {"dense": dense, "moe": self.layers - dense, "head": 1}
        return {kind: n for kind, n in counts.items() if n > 0}


_TOP = {"name": str, "source": str, "hidden": int, "layers": int, "vocab": int, "rms_eps": float,
        "rope_theta": float, "accepted_tokens_per_step": float}
_GQA = ("heads", "kv_heads", "head_dim")
_MLA = ("heads", "q_lora", "kv_lora", "rope_head", "nope_head", "v_head")
_MOE = {"routed_experts": int, "shared_experts": int, "top_k": int, "expert_ffn": int,
        "first_dense_layers": int, "gate": str, "groups": int, "top_groups": int, "routed_scaling": float}
_MOE_OPTIONAL = ("gate", "groups", "top_groups", "routed_scaling")


class _Reader:
    """Typed, checked reads from one parsed TOML file, each error naming file, key and value."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def error(self, key: str, value: Any, what: str) -> ParityError:
        return ParityError(f"{self.origin}: {key} = {value!r} {what}")

    def table(self, data: dict[str, Any], key: str, *, required: bool = True) -> dict[str, Any] | None:
        value = data.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, dict):
            raise self.error(key, value, "must be a table; add a [" + key + "] section")
        return value

    def value(self, data: dict[str, Any], key: str, kind: type, *, where: str = "", minimum: float | None = 1) -> Any:
        name = f"{where}.{key}" if where else key
        if key not in data:
            raise ParityError(f"{self.origin}: {name} is missing; add it (see parity decode offline --help)")
        value = data[key]
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise self.error(name, value, "must be an integer")
        if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise self.error(name, value, "must be a number")
        if kind is str and not isinstance(value, str):
            raise self.error(name, value, "must be text in quotes")
        if kind is not str and minimum is not None and not value >= minimum:
            raise self.error(name, value, f"must be at least {minimum:g}")
        return float(value) if kind is float else value

    def only(self, data: dict[str, Any], allowed: Any, *, where: str = "") -> None:
        for key in data:
            if key not in allowed:
                name = f"{where}.{key}" if where else key
                raise self.error(name, data[key], f"is not a known key; known: {', '.join(allowed)}")


def _attention(reader: _Reader, data: dict[str, Any]) -> Attention:
    kind = reader.value(data, "type", str, where="attention")
    if kind not in ("gqa", "mla"):
        raise reader.error("attention.type", kind, "is not gqa or mla")
    keys = _GQA if kind == "gqa" else _MLA
    reader.only(data, ("type", *keys), where="attention")
    values = {k: reader.value(data, k, int, where="attention") for k in keys}
    if kind == "gqa" and values["heads"] % values["kv_heads"]:
        raise reader.error("attention.kv_heads", values["kv_heads"],
                           f"must divide attention.heads = {values['heads']}")
    if kind == "mla" and values["rope_head"] % 2:
        raise reader.error("attention.rope_head", values["rope_head"], "must be even (RoPE rotates pairs)")
    if kind == "gqa" and values["head_dim"] % 2:
        raise reader.error("attention.head_dim", values["head_dim"], "must be even (RoPE rotates pairs)")
    return Attention(type=kind, **values)


def _moe(reader: _Reader, data: dict[str, Any], *, layers: int) -> Moe:
    reader.only(data, tuple(_MOE), where="moe")
    values = {}
    for key, kind in _MOE.items():
        if key in _MOE_OPTIONAL and key not in data:
            continue
        low = 0 if key in ("shared_experts", "first_dense_layers") else (None if kind is str else 1)
        values[key] = reader.value(data, key, kind, where="moe", minimum=low)
    moe = Moe(**values)
    if moe.gate not in ("softmax", "sigmoid"):
        raise reader.error("moe.gate", moe.gate, "is not softmax or sigmoid")
    if moe.top_k > moe.routed_experts:
        raise reader.error("moe.top_k", moe.top_k, f"exceeds moe.routed_experts = {moe.routed_experts}")
    if moe.routed_experts % moe.groups or moe.top_groups > moe.groups:
        raise reader.error("moe.groups", moe.groups,
                           f"must divide moe.routed_experts and be at least moe.top_groups = {moe.top_groups}")
    if moe.top_k > moe.top_groups * (moe.routed_experts // moe.groups):
        raise reader.error("moe.top_k", moe.top_k, "exceeds the experts in moe.top_groups groups")
    if moe.first_dense_layers > layers:
        raise reader.error("moe.first_dense_layers", moe.first_dense_layers, f"exceeds layers = {layers}")
    return moe


def parse_config(data: dict[str, Any], *, origin: str) -> ModelConfig:
    """A checked :class:`ModelConfig` from parsed TOML ``data`` read from ``origin``."""
    reader = _Reader(origin)
    reader.only(data, (*_TOP, "attention", "mlp", "moe"))
    top = {k: reader.value(data, k, kind, minimum=None if kind is str else 1) for k, kind in _TOP.items()
           if k not in ("rms_eps",)}
    top["rms_eps"] = reader.value(data, "rms_eps", float, minimum=0)
    mlp = reader.table(data, "mlp")
    reader.only(mlp, ("ffn",), where="mlp")
    attention = _attention(reader, reader.table(data, "attention"))
    moe_table = reader.table(data, "moe", required=False)
    moe = None if moe_table is None else _moe(reader, moe_table, layers=top["layers"])
    return ModelConfig(**top, attention=attention, ffn=reader.value(mlp, "ffn", int, where="mlp"),
                       moe=moe, origin=origin)


def load_config(name_or_path: str) -> ModelConfig:
    """A shipped config by name (``tiny``, ``llama-3-8b``, ...) or a user's TOML file by path."""
    if name_or_path in SHIPPED:
        resource = resources.files("parity").joinpath(f"data/decode/{name_or_path}.toml")
        text, origin = resource.read_text(encoding="utf-8"), f"parity/data/decode/{name_or_path}.toml"
    else:
        path = Path(name_or_path)
        if not path.is_file():
            raise ParityError(f"model config {name_or_path!r} is neither a shipped config "
                              f"({', '.join(SHIPPED)}) nor a TOML file; give one of those or a path")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ParityError(f"{path}: cannot be read ({exc}); give a readable UTF-8 TOML file") from None
        origin = str(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ParityError(f"{origin}: not valid TOML ({exc}); fix the file") from None
    return parse_config(data, origin=origin)


def config_to_dict(config: ModelConfig) -> dict[str, Any]:
    """The config as JSON (stored with every case), ``origin`` included."""
    out = {f.name: getattr(config, f.name) for f in fields(config) if f.name not in ("attention", "moe")}
    out["attention"] = {f.name: getattr(config.attention, f.name) for f in fields(config.attention)}
    out["moe"] = None if config.moe is None else {f.name: getattr(config.moe, f.name) for f in fields(config.moe)}
    return out
