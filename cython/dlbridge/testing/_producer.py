"""The producer clauses: what a library's ``__dlpack__`` and
``__dlpack_device__`` must do, read back field by field through the kit's
own ctypes reading of the ABI (dlbridge.testing._abi)."""
from __future__ import annotations

from dlbridge.testing._abi import Consumed
from dlbridge.testing._model import Failed, NotApplicable, Producer, clause

PYTHON_SPEC = "DLPack Python specification"


def exported(x, **keywords) -> Consumed:
    """x.__dlpack__(**keywords), consumed by the kit; the caller releases it."""
    capsule = x.__dlpack__(**keywords)
    try:
        return Consumed(capsule)
    except AssertionError as error:
        raise Failed(f"__dlpack__({_call(keywords)}) returned {error}") from None


def _call(keywords: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in keywords.items())


@clause("producer.methods", title="the array has __dlpack__ and __dlpack_device__ of its own",
        source=PYTHON_SPEC,
        cites="The array object must implement both __dlpack__ and __dlpack_device__ (as methods).")
def methods(producer: Producer) -> str:
    x = producer.make()
    missing = [name for name in ("__dlpack__", "__dlpack_device__") if not callable(getattr(type(x), name, None))]
    if missing:
        raise Failed(f"{type(x).__qualname__} has no {' and no '.join(missing)}")
    return f"{type(x).__qualname__} has both"


@clause("producer.device.consistent", title="__dlpack_device__ names the device the capsule's tensor is on",
        source=PYTHON_SPEC,
        cites="__dlpack_device__ returns device type and device ID in DLPack format.")
def device_consistent(producer: Producer) -> str:
    x = producer.make()
    if not callable(getattr(x, "__dlpack_device__", None)):
        raise NotApplicable("no __dlpack_device__ (see producer.methods)")
    said = x.__dlpack_device__()
    tensor = exported(x, max_version=(1, 3))
    try:
        device = tensor.device
    finally:
        tensor.release()
    if not isinstance(said, tuple) or len(said) != 2 or tuple(int(v) for v in said) != device:
        raise Failed(f"__dlpack_device__() returned {said!r}, the capsule's tensor is on {device}")
    return f"{said!r} both"
