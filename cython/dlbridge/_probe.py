"""One array library's row of the doctor (python -m dlbridge), found in this
process.

``python -m dlbridge._probe LIBRARY`` imports the library, moves a small
array each way between it and dlbridge, and prints each field of the row as
soon as it is known, one JSON line ``[field, value]`` in the order of
``FIELDS``: run it by hand to see what a library prints or where it crashes.
The doctor runs one such process per library, all at once, as a
dlbridge._child_process child (``python -m dlbridge._probe FD CONFIG
LIBRARY``), which sends each field as an event on a pipe of its own: a
library that prints cannot garble the row, and one that kills, hangs or
forks its process costs only the fields not yet sent.

A row is a ``Library`` entry, probed by ``probe``. Another kind of row would
be a probe of its own, yielding the fields of ``Exchange`` in their order,
that ``main`` finds by name; the doctor's runner takes any of them.
"""
from __future__ import annotations

import array
import dataclasses
import faulthandler
import importlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Iterator

import dlbridge
from dlbridge._child_process import open_channel

VALUES = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


@dataclass
class Library:
    """How to make, address and import arrays of one library."""
    name: str
    module: str
    make: Callable[[Any], Any]              # module -> a float32 2x3 array of VALUES
    address: Callable[[Any], int]           # array -> address of its first element
    from_dlpack: Callable[[Any, Any], Any]  # (module, producer) -> array
    to_list: Callable[[Any], Any]
    writable: Callable[[Any], bool | None]   # array -> whether it takes writes; None: immutable arrays


def _numpy_address(x) -> int:
    return x.__array_interface__["data"][0]


LIBRARIES = [
    Library("numpy", "numpy",
            lambda np: np.asarray(VALUES, dtype=np.float32),
            _numpy_address, lambda np, a: np.from_dlpack(a), lambda x: x.tolist(),
            lambda x: bool(x.flags.writeable)),
    Library("torch", "torch",
            lambda torch: torch.tensor(VALUES, dtype=torch.float32),
            lambda x: x.data_ptr(), lambda torch, a: torch.from_dlpack(a), lambda x: x.tolist(),
            lambda x: True),  # PyTorch has no read-only tensors
    Library("jax", "jax.numpy",
            lambda jnp: jnp.asarray(VALUES, dtype=jnp.float32),
            lambda x: x.unsafe_buffer_pointer(), lambda jnp, a: jnp.from_dlpack(a), lambda x: x.tolist(),
            lambda x: None),
    Library("array_api_strict", "array_api_strict",
            lambda xp: xp.asarray(VALUES, dtype=xp.float32),
            lambda x: _numpy_address(x._array), lambda xp, a: xp.from_dlpack(a),
            lambda x: x._array.tolist(), lambda x: bool(x._array.flags.writeable)),
    Library("cupy", "cupy",
            lambda cp: cp.asarray(VALUES, dtype=cp.float32),
            lambda x: x.data.ptr, lambda cp, a: cp.from_dlpack(a), lambda x: x.get().tolist(),
            lambda x: True),  # CuPy has no read-only arrays
]


@dataclass
class Exchange:
    """A row of the doctor; its fields are the JSON schema of ``--json`` (docs/guide.md, "The CLI")."""
    library: str
    version: str  # "-" when the library did not import; "version unknown (...)"
    into_dlbridge: str  # "zero-copy", "copy", "failed: ...", "crashed: ...", "timed out after N s",
    from_dlbridge: str  # or, for a library that did not import, "not installed" or "import failed/crashed/timed out"
    writable_arrives: str   # "writable", "read-only", "immutable", "refused: ...", or "-"
    read_only_arrives: str
    transposed_arrives: str  # "same values", "WRONG VALUES: ...", "refused: ...", or "-"


FIELDS = tuple(field.name for field in dataclasses.fields(Exchange))[1:]  # in the order probe finds them


def unavailable(lib: Library, reason: str) -> Exchange:
    """The row of a library that did not import, and why."""
    return Exchange(lib.name, "-", reason, reason, "-", "-", "-")


def describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _verdict(shared: bool, values_ok: bool) -> str:
    if not values_ok:
        return "failed: the values changed in transit"
    return "zero-copy" if shared else "copy"


def _read_only_values() -> dlbridge.Array:
    """VALUES as a read-only float32 Array, made without any array library."""
    flat = array.array("f", [v for row in VALUES for v in row])
    return dlbridge.asarray(memoryview(flat).toreadonly().cast("B").cast("f", (2, 3)))


# A library's code may raise anything, SystemExit and KeyboardInterrupt included:
# each is its row's finding, so the steps below catch BaseException.

def _import(lib: Library) -> ModuleType | str:
    """The library's module, or why there is none."""
    try:
        if importlib.util.find_spec(lib.module.partition(".")[0]) is None:
            return "not installed"
        return importlib.import_module(lib.module)
    except BaseException as error:
        return f"import failed: {describe(error)}"


def _version(module: ModuleType) -> str:
    try:
        version = getattr(module, "__version__", None)
    except BaseException as error:
        return f"version unknown ({describe(error)})"
    if version is None:
        return "version unknown (no __version__)"
    if not isinstance(version, str):
        return f"version unknown (__version__ is {type(version).__name__}, not str)"
    return version


def _into_dlbridge(lib: Library, module: Any) -> str:
    try:
        x = lib.make(module)
        a = dlbridge.from_dlpack(x)
        return _verdict(a.data_ptr == lib.address(x), a.tolist() == VALUES)
    except BaseException as error:
        return f"failed: {describe(error)}"


def _from_dlbridge(lib: Library, module: Any) -> str:
    try:
        source = dlbridge.asarray(VALUES, dtype="float32")
        y = lib.from_dlpack(module, source)
        return _verdict(lib.address(y) == source.data_ptr, lib.to_list(y) == VALUES)
    except BaseException as error:
        return f"failed: {describe(error)}"


def _arrives(lib: Library, module: Any, source: dlbridge.Array) -> str:
    """What the library makes of `source`: writable, read-only or immutable."""
    try:
        writable = lib.writable(lib.from_dlpack(module, source))
    except BaseException as error:
        return f"refused: {describe(error)}"
    return "immutable" if writable is None else "writable" if writable else "read-only"


def _transposed_arrives(lib: Library, module: Any) -> str:
    """Whether a column-major view (strides (1, 3) elements) arrives with its
    values: a consumer that ignores the strides reads the memory as row-major."""
    source = dlbridge.asarray(VALUES, dtype="float32").T
    try:
        values = lib.to_list(lib.from_dlpack(module, source))
    except BaseException as error:
        return f"refused: {describe(error)}"
    if values != source.tolist():
        return "WRONG VALUES: the library ignored the strides"
    return "same values"


def probe(lib: Library) -> Iterator[tuple[str, str]]:
    """The row of `lib`, (field, value) in the order of FIELDS, each as soon as it is known."""
    module = _import(lib)
    if isinstance(module, str):
        row = dataclasses.asdict(unavailable(lib, module))
        yield from ((field, row[field]) for field in FIELDS)
        return
    yield "version", _version(sys.modules.get(lib.name, module))
    yield "into_dlbridge", _into_dlbridge(lib, module)
    yield "from_dlbridge", _from_dlbridge(lib, module)
    yield "writable_arrives", _arrives(lib, module, dlbridge.asarray(VALUES, dtype="float32"))
    yield "read_only_arrives", _arrives(lib, module, _read_only_values())
    yield "transposed_arrives", _transposed_arrives(lib, module)


def check(lib: Library) -> Exchange:
    """The row of `lib`, found in this process."""
    return Exchange(lib.name, **dict(probe(lib)))


def _print_field(field: str, value: Any) -> None:
    print(json.dumps([field, value]), flush=True)


def main(argv: list[str]) -> None:
    send: Callable[[str, Any], None] = _print_field  # by hand: the fields on standard output
    if len(argv) == 3 and argv[0].isdigit():  # FD CONFIG LIBRARY: the doctor's child
        channel, argv = open_channel(argv)
        send = channel.send
    libraries = {lib.name: lib for lib in LIBRARIES}
    if len(argv) != 1 or argv[0] not in libraries:
        sys.exit(f"usage: python -m dlbridge._probe LIBRARY; LIBRARY is one of {', '.join(libraries)}; "
                 f"got {' '.join(argv) or 'nothing'}")
    faulthandler.enable()  # a crash says where on standard error, whose end the doctor shows
    for field, value in probe(libraries[argv[0]]):
        send(field, value)
    sys.stdout.flush()  # what the library printed, when run by hand
    os._exit(0)  # done: no interpreter shutdown, where a library's atexit hooks and threads could still hang


if __name__ == "__main__":
    main(sys.argv[1:])
