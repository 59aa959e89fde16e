"""The DLPack conformance kit's FACTORY and FUNCTION for the extension
tests/downstream/nanobind_arrays (nanobind's own DLPack, no dlbridge):
``kit_nanobind:factory`` and ``kit_nanobind:consume``. The extension is
imported from sys.path, where tools/compatibility.py puts the folder it was
built into; the kit's child processes inherit sys.path."""
from __future__ import annotations

from typing import Any

import nanobind_arrays


def factory(shape: tuple[int, ...], dtype: str, *, read_only: bool = False, device: str | None = None):
    if device is not None:
        raise NotImplementedError(f"nanobind_arrays makes host arrays only, not {device}")
    return nanobind_arrays.make(shape, dtype, read_only=read_only)


def consume(producer: Any):
    return nanobind_arrays.consume(producer)
