"""python -m dlbridge: how this installation exchanges arrays, checked live.

Prints the build; then the verdicts of the DLPack conformance kit
(dlbridge.testing) on dlbridge itself and on Python's own buffer exporters
(memoryview, array.array, bytes), which every machine has; then, for every
array library that imports, moves a small
array each way (library -> dlbridge and dlbridge -> library) and reports
whether the exchange shared memory (zero-copy), copied, or failed and why;
then what the library makes of a writable and of a read-only dlbridge array
(which varies with its version: docs/compatibility.md), and whether a
transposed one arrives with its values (JAX 0.6.0 to 0.7.1 ignore the
strides).

Each library (or each named by ``--library``) is probed in a child process
of its own (dlbridge._probe), all at once, so a library that is broken
(raises anything at import, crashes, exits, hangs or prints) becomes a row
saying so, never the end of the report.

Exit status: 0 when every applicable clause of the kit passed and every
exchange with every library that imports worked; 1 when a clause failed or
an exchange failed, crashed, timed out or changed the values; 2 for a usage
error; 141 when the reader of the output went away (python -m dlbridge |
head). A library that is not installed or does not import is reported and
leaves the status alone.

For C++ builds, ``--cflags`` prints the compiler flags that find dlbridge's
headers (the same as ``pkg-config --cflags dlbridge``; the language standard,
C++20 or newer, is left to the build), ``--pkgconfigdir`` the folder of
``dlbridge.pc`` and ``--cmakedir`` that of ``dlbridgeConfig.cmake``; none of
them runs the check. ``--cython-flags`` prints the Cython flag that finds
its ``.pxd`` files.

``python -m dlbridge stubs MODULE [-o DIR]`` writes a ``.pyi`` for an
extension module whose functions take array arguments (dlbridge._signatures).
``python -m dlbridge check --producer MODULE:FACTORY`` runs the DLPack
conformance kit on a library (dlbridge.testing._report).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Sequence

import dlbridge
from dlbridge._child_process import ChildProcess, ending, stop_children_on_signals, wait
from dlbridge._probe import FIELDS, LIBRARIES, Exchange, Library, unavailable
from dlbridge.testing import FAIL, Result
from dlbridge.testing._report import escape_unencodable_output, summary
from dlbridge.testing._runner import run_isolated, seconds_argument

# What the kit checks on every machine: (subject, side, MODULE:NAME).
KIT_SUBJECTS = [("dlbridge.Array", "producer", "dlbridge.testing.libraries:dlbridge_array"),
                ("dlbridge.from_dlpack", "consumer", "dlbridge.testing.libraries:dlbridge_from_dlpack"),
                ("memoryview", "producer", "dlbridge.testing.libraries:memoryview_of"),
                ("array.array", "producer", "dlbridge.testing.libraries:array_array"),
                ("bytes", "producer", "dlbridge.testing.libraries:bytes_of")]
# How to install the libraries the doctor probes (by row name), for the hint when one is missing.
INSTALL = {"numpy": "numpy", "torch": "torch", "jax": "jax", "array_api_strict": "array-api-strict",
           "cupy": "cupy-cuda12x"}
# PyPI's torch for Linux x86-64 brings CUDA's libraries (gigabytes): where no GPU is usable, PyTorch's CPU build.
TORCH_CPU = "torch --index-url https://download.pytorch.org/whl/cpu"
# The kit's factories over each library the doctor probes: (producer, consumer) in dlbridge.testing.libraries.
KIT_FACTORIES = {"numpy": ("numpy_array", "numpy_from_dlpack"), "torch": ("torch_tensor", "torch_from_dlpack"),
                 "jax": ("jax_array", "jax_from_dlpack"),
                 "array_api_strict": ("array_api_strict_array", "array_api_strict_from_dlpack"),
                 "cupy": ("cupy_array", "cupy_from_dlpack")}

# The beginnings of the values that fail the check (see the exit status above).
FAILURES = ("failed", "crashed", "timed out", "WRONG")


class _Probe:
    """One library's row, being found by a child process (python -m dlbridge._probe)."""

    def __init__(self, lib: Library, timeout: float, import_timeout: float):
        self.lib, self.timeout, self.limit = lib, timeout, import_timeout
        self.fields: dict[str, str] = {}
        self.child = ChildProcess("dlbridge._probe", [lib.name])
        self.deadline = time.monotonic() + import_timeout
        self.crash = ""  # the end of what a child that crashed wrote on standard error

    def row(self) -> Exchange | None:
        """Takes what the child sent; its row once it is complete, the child
        has ended or its time is up."""
        self.child.read()
        for field, value in self.child.events:
            if len(self.fields) < len(FIELDS) and field == FIELDS[len(self.fields)] and isinstance(value, str):
                self.fields[field] = value
                if field == "version":  # imported: the exchanges have their own time
                    self.limit = self.timeout
                    self.deadline = time.monotonic() + self.timeout
        self.child.events.clear()
        if len(self.fields) == len(FIELDS):
            self.child.stop()
            return Exchange(self.lib.name, **self.fields)
        if self.child.returncode is not None:
            if self.child.returncode != 0:
                self.crash = self.child.stderr_excerpt()
            return self.ended(ending(self.child.returncode))
        if time.monotonic() >= self.deadline:
            self.child.stop()
            return self.ended(f"timed out after {self.limit:g} s")
        return None

    def ended(self, how: str) -> Exchange:
        """The row of a child that ended `how` before it was complete: in the field it was finding."""
        if "version" not in self.fields:
            return unavailable(self.lib, "import " + how)
        row = dict.fromkeys(FIELDS, "-") | self.fields
        row[FIELDS[len(self.fields)]] = how
        return Exchange(self.lib.name, **row)


def run_probes(libraries: Sequence[Library], timeout: float,
               import_timeout: float) -> tuple[list[Exchange], list[tuple[str, str]]]:
    """The row of each library, each found by a child process, all running at once (a child has
    `import_timeout` seconds to import its library, then `timeout` seconds for the exchanges),
    and (library, the end of what its child wrote on standard error) for each child that crashed."""
    rows: dict[str, Exchange] = {}
    probes: list[_Probe] = []
    try:
        probes = [_Probe(lib, timeout, import_timeout) for lib in libraries]
        while len(rows) < len(probes):
            running = [p for p in probes if p.lib.name not in rows]
            wait([p.child for p in running], min(p.deadline for p in running))
            for probe in running:
                row = probe.row()
                if row is not None:
                    rows[row.library] = row
    finally:
        for probe in probes:
            probe.child.stop()
    return [rows[lib.name] for lib in libraries], [(p.lib.name, p.crash) for p in probes if p.crash]


def _installed_folder(folder: str) -> str:
    """`folder` of the package, which a regular install has and an editable one lacks."""
    if not os.path.isdir(dlbridge.get_include()):
        raise SystemExit(f"python -m dlbridge: dlbridge at {os.path.dirname(dlbridge.__file__)} has no "
                         f"{dlbridge.get_include()}: build C++ and Cython consumers against a regular install "
                         f"(pip install dlbridge, not -e); see \"Editable installs\" in docs/cython-guide.md")
    return folder


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["stubs"]:
        from dlbridge._signatures import stubs_main
        return stubs_main(argv[1:])
    if argv[:1] == ["check"]:
        from dlbridge.testing._report import main as check_main
        return check_main(argv[1:])
    info = dlbridge.build_info()
    cuda = f"CUDA {info['cuda_version']}" if info["cuda"] else "no CUDA backend"
    parser = argparse.ArgumentParser(prog="python -m dlbridge", description=__doc__.splitlines()[0],
                                     epilog="python -m dlbridge stubs MODULE [-o DIR] writes a .pyi for an extension "
                                            "module whose functions take array arguments (stubs --help); "
                                            "python -m dlbridge check --producer MODULE:FACTORY runs the DLPack "
                                            "conformance kit on a library (check --help)")
    parser.add_argument("--version", action="version",
                        version=f"dlbridge {info['version']} (DLPack {info['dlpack_version']}, {info['compiler']}, "
                                f"{info['cpp_std']}, {cuda})")
    parser.add_argument("--timeout", type=seconds_argument, default=10.0, metavar="SECONDS",
                        help="time each library has for its exchanges, once imported (default: %(default)g)")
    parser.add_argument("--import-timeout", type=seconds_argument, default=60.0, metavar="SECONDS",
                        help="time each library has to import (default: %(default)g)")
    parser.add_argument("--library", action="append", choices=[lib.name for lib in LIBRARIES], metavar="NAME",
                        help="probe this library only (again for more; default: every one of "
                             f"{', '.join(lib.name for lib in LIBRARIES)})")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    mode.add_argument("--cflags", action="store_true",
                      help="print the C++ compiler flags for dlbridge's headers and exit "
                           "(add -std=c++20 or newer yourself)")
    mode.add_argument("--cython-flags", action="store_true",
                      help="print the Cython flag that finds dlbridge's .pxd files (-I<the folder holding the "
                           "dlbridge package>) and exit")
    mode.add_argument("--pkgconfigdir", action="store_true",
                      help="print the folder holding dlbridge.pc (for PKG_CONFIG_PATH) and exit")
    mode.add_argument("--cmakedir", action="store_true",
                      help="print the folder holding dlbridgeConfig.cmake (for dlbridge_DIR) and exit")
    args = parser.parse_args(argv)
    if args.cflags:
        print(f"-I{_installed_folder(dlbridge.get_include())}")
        return 0
    if args.cython_flags:
        print(f"-I{_installed_folder(os.path.dirname(os.path.dirname(os.path.abspath(dlbridge.__file__))))}")
        return 0
    if args.pkgconfigdir:
        print(dlbridge.get_pkgconfig_dir())
        return 0
    if args.cmakedir:
        print(dlbridge.get_cmake_dir())
        return 0

    stop_children_on_signals()
    with ThreadPoolExecutor(len(KIT_SUBJECTS)) as pool:  # the kit's children run beside the probes'
        kit = [pool.submit(run_isolated, side, spec, timeout=args.timeout) for _, side, spec in KIT_SUBJECTS]
        probed = [lib for lib in LIBRARIES if args.library is None or lib.name in args.library]
        results, crashes = run_probes(probed, args.timeout, args.import_timeout)
        verdicts = [future.result() for future in kit]
    failed = any(getattr(r, field).startswith(FAILURES) for r in results for field in FIELDS if field != "version")
    failed |= any(r.verdict == FAIL for found in verdicts for r in found)
    if args.json:
        conformance = [{"subject": name, "side": side, "spec": spec, "summary": summary(found),
                        "results": [asdict(r) for r in found]}
                       for (name, side, spec), found in zip(KIT_SUBJECTS, verdicts)]
        print(json.dumps({"build": info, "conformance": conformance, "exchanges": [asdict(r) for r in results]},
                         indent=2))
        _print_crashes(crashes)
        return 1 if failed else 0

    escape_unencodable_output()
    print(f"dlbridge {info['version']}: DLPack {info['dlpack_version']}, {info['compiler']}, {info['cpp_std']}")
    if info["cuda"]:
        gpus = f"{info['gpu_count']} GPU(s)" if info["gpu_count"] else f"no GPU ({info['cuda_status']})"
        print(f"CUDA backend: built with runtime {info['cuda_version']}; {gpus}")
    else:
        print("CUDA backend: not built")
    print()
    _print_kit(verdicts)
    print()
    _print_table([("library", "version", "library -> dlbridge", "dlbridge -> library")] +
                 [(r.library, r.version, r.into_dlbridge, r.from_dlbridge) for r in results])
    installed = [r for r in results if r.version != "-"]
    if installed:
        print()
        print("What each library makes of a dlbridge array (docs/compatibility.md):")
        _print_table([("library", "a transposed array arrives", "a writable array arrives",
                       "a read-only array arrives")] +
                     [(r.library, r.transposed_arrives, r.writable_arrives, r.read_only_arrives) for r in installed])
    print()
    for line in next_steps(results, gpu=bool(info["cuda"] and info["gpu_count"])):
        print(line)
    _print_crashes(crashes)
    return 1 if failed else 0


def _print_crashes(crashes: list[tuple[str, str]]) -> None:
    """What the probes that crashed wrote last on standard error, after the report, on standard error."""
    sys.stdout.flush()
    for library, said in crashes:
        print(f"python -m dlbridge: the probe of {library} crashed; what it wrote on standard error:\n"
              f"{said}", file=sys.stderr)


def shell_python() -> str:
    """How the user's shell runs this interpreter: `python` in its active
    virtual environment, else its path (a virtual environment not activated,
    such as the .venv install.sh makes for Debian's system Python, where
    `python3 -m pip` would meet PEP 668)."""
    if sys.prefix == sys.base_prefix:
        return "python3"
    active = os.environ.get("VIRTUAL_ENV")
    if active and os.path.realpath(active) == os.path.realpath(sys.prefix):
        return "python"
    path = os.path.relpath(sys.executable)
    return path if not path.startswith("..") else sys.executable


def next_steps(results: Sequence[Exchange], gpu: bool) -> list[str]:
    """What the user can do next, every command runnable here as printed:
    install the missing libraries (no CuPy where no GPU is usable, nor
    PyPI's Linux x86-64 PyTorch, which brings CUDA), and run the kit on a
    library that is installed."""
    python = shell_python()
    lines = []
    missing = [r.library for r in results if r.into_dlbridge == "not installed" and (gpu or r.library != "cupy")]
    cpu_torch = not gpu and platform.system() == "Linux" and platform.machine() == "x86_64"
    if missing:
        names = [INSTALL[name] for name in missing if not (cpu_torch and name == "torch")]
        if names:
            cuda13 = " (with CUDA 13: cupy-cuda13x)" if "cupy" in missing else ""
            lines.append(f"To check the libraries not installed too: {python} -m pip install {' '.join(names)}{cuda13}")
        if cpu_torch and "torch" in missing:
            lines.append(f"PyTorch's CPU build (no GPU is usable here; PyPI's torch brings CUDA's libraries): "
                         f"{python} -m pip install {TORCH_CPU}")
    kit = next((r.library for r in results if r.version != "-" and r.library in KIT_FACTORIES
                and (gpu or r.library != "cupy")), None)
    producer, consumer = KIT_FACTORIES[kit or "numpy"]
    command = (f"{python} -m dlbridge check --producer dlbridge.testing.libraries:{producer} "
               f"--consumer dlbridge.testing.libraries:{consumer}")
    if kit:
        lines.append(f"The kit's report on {kit}: {command} (docs/check-your-library.md)")
    else:
        lines.append(f"The kit's report on an array library, once one is installed (NumPy: {python} -m pip install "
                     f"numpy): {command} (docs/check-your-library.md)")
    return lines


def _print_kit(verdicts: list[list[Result]]) -> None:
    """The kit's verdicts on what every machine has, with the clauses that failed."""
    print("The DLPack conformance kit on what every Python has (python -m dlbridge check):")
    rows: list[tuple[str, ...]] = [("subject", "side", "pass", "warn", "fail", "n/a")]
    for (name, side, _), found in zip(KIT_SUBJECTS, verdicts):
        counts = summary(found)
        rows.append((name, side, *(str(n) for n in counts.values())))
    _print_table(rows)
    for (name, _, _), found in zip(KIT_SUBJECTS, verdicts):
        for r in found:
            if r.verdict == FAIL:
                print(f"  FAIL {name}: {r.clause}: {r.observed}")


def _print_table(rows: Sequence[tuple[str, ...]]) -> None:
    """Left-aligned columns; the last one is not padded (it may be long)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1])


def _run() -> int:
    try:
        try:
            return main()
        finally:
            sys.stdout.flush()  # here, where a reader that went away can still be told apart
    except BrokenPipeError:
        # As CPython's documentation advises (signal module, "Note on SIGPIPE"): no traceback, and no second
        # error when Python flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(_run())
