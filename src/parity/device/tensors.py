"""Random input tensors in any dtype: never zeros, because zeros change clocks and power.

Floating dtypes draw a standard normal in float32 and push magnitudes below ``MIN_MAGNITUDE``
up to it (keeping the sign), then cast; that floor (2**-6) is a normal number in every float8
format, so no element rounds to zero. Integer dtypes draw uniformly from the int8 range (or the
dtype's own range when smaller) and replace zeros by one. Booleans are random bits.
"""

from __future__ import annotations

from typing import Any

from parity.model.errors import ParityError

MIN_MAGNITUDE = 2.0**-6

DTYPE_ALIASES = {
    "fp64": "float64",
    "double": "float64",
    "fp32": "float32",
    "float": "float32",
    "tf32": "float32",
    "fp16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
    "fp8": "float8_e4m3fn",
    "fp8_e4m3": "float8_e4m3fn",
    "e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
    "e5m2": "float8_e5m2",
    "i8": "int8",
    "u8": "uint8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
}


def as_dtype(value: Any) -> Any:
    """A ``torch.dtype`` from a dtype or a name (``"bf16"``, ``"float8_e4m3fn"``, ``"int8"``)."""
    import torch

    if isinstance(value, torch.dtype):
        return value
    name = DTYPE_ALIASES.get(str(value).lower(), str(value).lower()).removeprefix("torch.")
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ParityError(
            f"unknown dtype {value!r}; use a torch dtype name such as bfloat16 or int8"
        )
    return dtype


def random_tensor(
    shape: tuple[int, ...] | list[int], dtype: Any, *, device: Any, generator: Any = None
) -> Any:
    """A tensor of ``shape`` and ``dtype`` on ``device`` with random, non-zero values.

    ``generator`` (a ``torch.Generator``) makes the values reproducible; values are drawn on the
    generator's device and moved when it differs from ``device``.
    """
    import torch

    dtype = as_dtype(dtype)
    target = torch.device(device)
    source = generator.device if generator is not None else target
    shape = tuple(int(s) for s in shape)
    if dtype is torch.bool:
        values = torch.randint(0, 2, shape, generator=generator, device=source, dtype=torch.uint8)
        return values.to(device=target, dtype=torch.bool)
    if dtype.is_complex:
        values = torch.randn(shape, generator=generator, device=source, dtype=dtype)
        return torch.where(values == 0, torch.ones_like(values), values).to(target)
    if dtype.is_floating_point:
        return _random_float(shape, dtype, source=source, generator=generator).to(target)
    return _random_integer(shape, dtype, source=source, generator=generator).to(target)


def _random_float(shape: tuple[int, ...], dtype: Any, *, source: Any, generator: Any) -> Any:
    """In place on one float32 buffer, so peak memory is that buffer plus the result."""
    import torch

    values = torch.randn(shape, generator=generator, device=source, dtype=torch.float32)
    tiny = values.abs() < MIN_MAGNITUDE
    values.masked_fill_(tiny & (values >= 0), MIN_MAGNITUDE)
    values.masked_fill_(tiny & (values < 0), -MIN_MAGNITUDE)
    del tiny
    if "e8m0" in str(dtype):  # exponent-only scale formats hold positive powers of two
        values.abs_()
    info = torch.finfo(dtype)
    values.clamp_(min=max(float(info.min), -1e30), max=min(float(info.max), 1e30))
    return values.to(dtype)


def _random_integer(shape: tuple[int, ...], dtype: Any, *, source: Any, generator: Any) -> Any:
    """Drawn as int16 (the range fits), zeros replaced by one in place."""
    import torch

    info = torch.iinfo(dtype)
    low, high = max(info.min, -128), min(info.max, 127 if info.min < 0 else 255)
    values = torch.randint(
        low, high + 1, shape, generator=generator, device=source, dtype=torch.int16
    )
    values.masked_fill_(values == 0, 1)
    return values.to(dtype)


def probe_dtype(device: Any, dtype: Any) -> bool:
    """True when a small random tensor of ``dtype`` can be created on ``device`` and read back."""
    try:
        tensor = device.random_tensor((4, 4), dtype)
        device.synchronize()
        tensor.to("cpu")
    except (RuntimeError, TypeError, ParityError, NotImplementedError):
        return False
    return True
