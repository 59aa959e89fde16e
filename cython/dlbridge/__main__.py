"""python -m dlbridge: how this installation exchanges arrays, checked live.

Prints the build, then for every array library that imports, moves a small
array each way (library -> dlbridge and dlbridge -> library) and reports
whether the exchange shared memory (zero-copy), copied, or failed and why;
then what the library makes of a writable and of a read-only dlbridge array
(which varies with its version: docs/compatibility.md), and whether a
transposed one arrives with its values (JAX 0.6.0 to 0.7.1 ignore the
strides). Exits 1 when any exchange failed or changed the values.

For C++ builds, ``--cflags`` prints the compiler flags that find dlbridge's
headers (the same as ``pkg-config --cflags dlbridge``; the language standard,
C++20 or newer, is left to the build), ``--pkgconfigdir`` the folder of
``dlbridge.pc`` and ``--cmakedir`` that of ``dlbridgeConfig.cmake``; none of
them runs the check.
"""
from __future__ import annotations

import argparse
import array
import importlib
import json
import sys
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import dlbridge

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
    library: str
    version: str
    into_dlbridge: str  # "zero-copy", "copy", "failed: ...", or "not installed"
    from_dlbridge: str
    writable_arrives: str   # "writable", "read-only", "immutable", "refused: ...", or "-"
    read_only_arrives: str
    transposed_arrives: str  # "same values", "WRONG VALUES: ...", "refused: ...", or "-"


def _verdict(shared: bool, values_ok: bool) -> str:
    if not values_ok:
        return "failed: the values changed in transit"
    return "zero-copy" if shared else "copy"


def _failure(error: BaseException) -> str:
    return f"failed: {type(error).__name__}: {error}"


def _read_only_values() -> dlbridge.Array:
    """VALUES as a read-only float32 Array, made without any array library."""
    flat = array.array("f", [v for row in VALUES for v in row])
    return dlbridge.asarray(memoryview(flat).toreadonly().cast("B").cast("f", (2, 3)))


def _arrives(lib: Library, module: Any, source: dlbridge.Array) -> str:
    """What the library makes of `source`: writable, read-only or immutable."""
    try:
        writable = lib.writable(lib.from_dlpack(module, source))
    except Exception as error:
        return f"refused: {type(error).__name__}: {error}"
    return "immutable" if writable is None else "writable" if writable else "read-only"


def _transposed_arrives(lib: Library, module: Any) -> str:
    """Whether a column-major view (strides (1, 3) elements) arrives with its
    values: a consumer that ignores the strides reads the memory as row-major."""
    source = dlbridge.asarray(VALUES, dtype="float32").T
    try:
        values = lib.to_list(lib.from_dlpack(module, source))
    except Exception as error:
        return f"refused: {type(error).__name__}: {error}"
    if values != source.tolist():
        return "WRONG VALUES: the library ignored the strides"
    return "same values"


def check(lib: Library) -> Exchange:
    try:
        module = importlib.import_module(lib.module)
    except Exception as error:  # ImportError, or a broken install raising anything
        reason = "not installed" if isinstance(error, ModuleNotFoundError) else _failure(error)
        return Exchange(lib.name, "-", reason, reason, "-", "-", "-")
    version = getattr(sys.modules.get(lib.name, module), "__version__", "?")
    try:
        x = lib.make(module)
        a = dlbridge.from_dlpack(x)
        into = _verdict(a.data_ptr == lib.address(x), a.tolist() == VALUES)
    except Exception as error:
        into = _failure(error)
    try:
        source = dlbridge.asarray(VALUES, dtype="float32")
        y = lib.from_dlpack(module, source)
        out = _verdict(lib.address(y) == source.data_ptr, lib.to_list(y) == VALUES)
    except Exception as error:
        out = _failure(error)
    return Exchange(lib.name, str(version), into, out, _arrives(lib, module, dlbridge.asarray(VALUES, dtype="float32")),
                    _arrives(lib, module, _read_only_values()), _transposed_arrives(lib, module))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dlbridge", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    mode.add_argument("--cflags", action="store_true",
                      help="print the C++ compiler flags for dlbridge's headers and exit "
                           "(add -std=c++20 or newer yourself)")
    mode.add_argument("--pkgconfigdir", action="store_true",
                      help="print the folder holding dlbridge.pc (for PKG_CONFIG_PATH) and exit")
    mode.add_argument("--cmakedir", action="store_true",
                      help="print the folder holding dlbridgeConfig.cmake (for dlbridge_DIR) and exit")
    args = parser.parse_args(argv)
    if args.cflags:
        print(f"-I{dlbridge.get_include()}")
        return 0
    if args.pkgconfigdir:
        print(dlbridge.get_pkgconfig_dir())
        return 0
    if args.cmakedir:
        print(dlbridge.get_cmake_dir())
        return 0

    info = dlbridge.build_info()
    results = [check(lib) for lib in LIBRARIES]
    failed = any(r.into_dlbridge.startswith("failed") or r.from_dlbridge.startswith("failed")
                 or r.transposed_arrives.startswith("WRONG") for r in results)
    if args.json:
        print(json.dumps({"build": info, "exchanges": [asdict(r) for r in results]}, indent=2))
        return 1 if failed else 0

    print(f"dlbridge {info['version']}: DLPack {info['dlpack_version']}, {info['compiler']}, {info['cpp_std']}")
    if info["cuda"]:
        gpus = f"{info['gpu_count']} GPU(s)" if info["gpu_count"] else f"no GPU ({info['cuda_status']})"
        print(f"CUDA backend: built with runtime {info['cuda_version']}; {gpus}")
    else:
        print("CUDA backend: not built")
    print()
    _print_table([("library", "version", "library -> dlbridge", "dlbridge -> library")] +
                 [(r.library, r.version, r.into_dlbridge, r.from_dlbridge) for r in results])
    print()
    print("What each library makes of a dlbridge array (docs/compatibility.md):")
    _print_table([("library", "a transposed array arrives", "a writable array arrives", "a read-only array arrives")] +
                 [(r.library, r.transposed_arrives, r.writable_arrives, r.read_only_arrives)
                  for r in results if r.version != "-"])
    return 1 if failed else 0


def _print_table(rows: Sequence[tuple[str, ...]]) -> None:
    """Left-aligned columns; the last one is not padded (it may be long)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1])


if __name__ == "__main__":
    sys.exit(main())
