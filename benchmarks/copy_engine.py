"""The CPU copy engine's settings against memcpy, on this machine (issue 15).

Builds benchmarks/copy_engine.cpp against the installed dlbridge's headers
with the system's C++ compiler (`$CXX`, else c++; cached under
build/benchmarks/) and prints its table: memcpy, plain 16-byte stores, and
2-D transposes of power-of-two and padded rows with each tile setting, at
2 MiB and 128 MiB, float32 and float64, into memory already mapped and (at
128 MiB) into new memory, whose cost alone it also times, and memcpy and the
transposes each followed by one read of its output (cached or streaming
stores, as the next reader meets them). It is for finding what limits the
transposes of benchmarks/copies.py on a machine, and for choosing tiles on a
new kind of machine; it is not part of run.py.

    python benchmarks/copy_engine.py [--quick]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import shlex
import subprocess
import sys

import dlbridge
from _harness import cpu_model

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCE = ROOT / "benchmarks" / "copy_engine.cpp"
CACHE = ROOT / "build" / "benchmarks"


def build() -> pathlib.Path:
    """The program, compiled unless a build of these sources and headers exists."""
    include = pathlib.Path(dlbridge.get_include())
    digest = hashlib.sha256(SOURCE.read_bytes())
    for header in sorted(include.rglob("*.hpp")):
        digest.update(header.read_bytes())
    program = CACHE / f"copy_engine-{digest.hexdigest()[:16]}"
    if not program.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        compiler = shlex.split(os.environ.get("CXX", "c++"))
        subprocess.run(compiler + ["-std=c++20", "-O3", "-pthread", f"-I{include}", str(SOURCE), "-o", str(program)],
                       check=True)
    return program


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke pass: few samples")
    args = parser.parse_args(argv)
    print(f"machine: {cpu_model()}, {os.cpu_count()} logical CPUs")
    print(f"dlbridge {dlbridge.__version__}, copy threads {dlbridge.get_copy_threads()}")
    sys.stdout.flush()
    return subprocess.run([str(build())] + (["--quick"] if args.quick else [])).returncode


if __name__ == "__main__":
    sys.exit(main())
