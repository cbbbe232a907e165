"""The weight formula of the architecture golden tests (make_arch_golden.py).

Every weight of the tiny reference models is a function of the tensor's Hugging Face name and the
element's index, so no weights are committed: the script and the C++ test helper
(tests/golden/formula_weights.{h,cpp}) compute the same float32 values bit for bit.

For an HF tensor named N (UTF-8 bytes) with E elements, element i (row-major HF order, 0 <= i < E):

    h    = fnv1a64(N)                                  FNV-1a 64 (offset 0xcbf29ce484222325,
                                                       prime 0x100000001b3)
    z    = splitmix64_mix((h + i) mod 2^64)             the SplitMix64 finalizer only (no golden-
                                                       gamma increment): src/common/splitmix64.h
    u    = ((z >> 40) - 2^23) * 2^-23                   24 random bits -> [-1, 1), exact in f32
    1-D tensors (norm weights):  w = float32(1 + u * 2^-3)   (the sum is exact in float64,
                                                              rounded to nearest-even once)
    2-D tensors (all matrices):  w = u * 2^-3                (exact in float32)

The value is computed in float64 (exact) and rounded to float32 once; for 2-D tensors the rounding
is a no-op.
"""

from __future__ import annotations

import numpy as np

MASK64 = (1 << 64) - 1
MATRIX_SCALE = 2.0**-3  # 2-D tensors
NORM_SCALE = 2.0**-3  # 1-D tensors: 1 + u * NORM_SCALE


def fnv1a64(name: str) -> int:
    h = 0xCBF29CE484222325
    for byte in name.encode("utf-8"):
        h ^= byte
        h = (h * 0x100000001B3) & MASK64
    return h


def splitmix64_mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer on uint64 arrays (wrapping arithmetic, as in C++)."""
    z = z.astype(np.uint64, copy=True)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def unit_values(name: str, count: int) -> np.ndarray:
    """u for elements 0..count-1 of tensor `name`, float64 in [-1, 1) (each a multiple of 2^-23)."""
    with np.errstate(over="ignore"):
        z = splitmix64_mix(np.uint64(fnv1a64(name)) + np.arange(count, dtype=np.uint64))
    top = (z >> np.uint64(40)).astype(np.int64)
    return (top - (1 << 23)).astype(np.float64) * 2.0**-23


def formula_tensor(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """The float32 tensor `name` of `shape` (PyTorch order) that the formula defines."""
    count = int(np.prod(shape))
    u = unit_values(name, count)
    if len(shape) == 1:
        values = 1.0 + u * NORM_SCALE
    elif len(shape) == 2:
        values = u * MATRIX_SCALE
    else:
        raise ValueError(f"{name}: the formula defines 1-D and 2-D tensors only, not {shape}")
    return values.astype(np.float32).reshape(shape)


def fnv1a64_bytes(data: bytes) -> int:
    """FNV-1a 64 of raw bytes: the per-tensor checksum golden.json records for the C++ side
    (a sequential loop; a few MB take seconds)."""
    h = 0xCBF29CE484222325
    for byte in data:
        h ^= byte
        h = (h * 0x100000001B3) & MASK64
    return h
