"""python tools/compatibility.py [--write]: the DLPack conformance kit on each library.

Runs every clause of the kit (dlbridge.testing) on each library
docs/compatibility.md covers, as a producer and, where it has one, as a
consumer: dlbridge, NumPy, PyTorch, JAX, array-api-strict, pyarrow, MLX
(its CPU build), Apache TVM FFI, an extension
built with nanobind alone (tests/downstream/nanobind_arrays, built here
into build/kit-nanobind) and Python's buffer exporters. Each subject runs
in child processes of its own (dlbridge.testing.check), all at once. Prints
the section "The conformance kit on each library" of docs/compatibility.md:
the versions it ran with, a table of verdicts per clause and subject, and
what each failure was in the library's own words; ``--write`` puts it into
the file between its markers instead. A library that is not installed is
left out and its version line says so.

tests/python/kit/test_kit_libraries.py regenerates the section and compares it
with the committed one when the versions are the same.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import pathlib
import platform
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterator

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "compatibility.md"
BEGIN, END = "<!-- kit-report:begin -->", "<!-- kit-report:end -->"
NANOBIND_SOURCE = ROOT / "tests" / "downstream" / "nanobind_arrays"
# kit_nanobind.py, the extension's FACTORY and FUNCTION for the kit.
WRAPPERS = ROOT / "tests" / "python" / "kit"
SIDES = ("producer", "consumer")


@dataclass(frozen=True)
class Subject:
    name: str                  # the table's column
    distribution: str | None   # whose version the report names; None: part of Python
    producer: str              # MODULE:FACTORY
    consumer: str | None       # MODULE:FUNCTION, None where the library consumes nothing

    def spec(self, side: str) -> str | None:
        return self.producer if side == "producer" else self.consumer


_LIB = "dlbridge.testing.libraries:"
SUBJECTS = [
    Subject("dlbridge", "dlbridge", _LIB + "dlbridge_array", _LIB + "dlbridge_from_dlpack"),
    Subject("NumPy", "numpy", _LIB + "numpy_array", _LIB + "numpy_from_dlpack"),
    Subject("PyTorch", "torch", _LIB + "torch_tensor", _LIB + "torch_from_dlpack"),
    Subject("JAX", "jax", _LIB + "jax_array", _LIB + "jax_from_dlpack"),
    Subject("array-api-strict", "array-api-strict", _LIB + "array_api_strict_array",
            _LIB + "array_api_strict_from_dlpack"),
    Subject("pyarrow", "pyarrow", _LIB + "pyarrow_array", _LIB + "pyarrow_from_dlpack"),
    Subject("MLX", "mlx", _LIB + "mlx_array", _LIB + "mlx_from_dlpack"),
    Subject("TVM FFI", "apache-tvm-ffi", _LIB + "tvm_ffi_tensor", _LIB + "tvm_ffi_from_dlpack"),
    Subject("nanobind", "nanobind", "kit_nanobind:factory", "kit_nanobind:consume"),
    Subject("memoryview", None, _LIB + "memoryview_of", None),
    Subject("array.array", None, _LIB + "array_array", None),
    Subject("bytes", None, _LIB + "bytes_of", None),
]


@dataclass
class Report:
    versions: dict[str, str | None]   # Python, then each subject's distribution: its version, None if absent
    gpu: bool                         # whether the GPU tier ran
    results: dict                     # (subject name, side) -> list of dlbridge.testing.Result

    def ran(self) -> list[Subject]:
        return [s for s in SUBJECTS if (s.name, "producer") in self.results]


def versions() -> dict[str, str | None]:
    import dlbridge
    # The minor version: a patch release changes no verdict, and Debian's 3.11.2 runs what pyenv's 3.11.7 wrote.
    python = ".".join(platform.python_version_tuple()[:2])
    found: dict[str, str | None] = {"Python": python, "dlbridge": dlbridge.__version__}
    for s in SUBJECTS:
        if s.distribution and s.distribution not in found:
            try:
                found[s.distribution] = importlib.metadata.version(s.distribution)
            except importlib.metadata.PackageNotFoundError:
                found[s.distribution] = None
    return found


def build_nanobind(folder: pathlib.Path, *setup_args: str) -> pathlib.Path:
    """Builds tests/downstream/nanobind_arrays with pip, as its users would
    (no build isolation: the installed nanobind and meson-python), in
    folder/build, with Meson's `setup_args`, and installs it into
    folder/target, which it returns. A folder built before is rebuilt
    incrementally."""
    command = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
               "--disable-pip-version-check", "--upgrade", "--target", str(folder / "target"),
               f"--config-settings=build-dir={folder / 'build'}",
               *(f"--config-settings=setup-args={arg}" for arg in setup_args), str(NANOBIND_SOURCE)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"building {NANOBIND_SOURCE.name} failed:\n{done.stdout}{done.stderr}")
    return folder / "target"


@contextlib.contextmanager
def _on_path(folders: list[pathlib.Path]) -> Iterator[None]:
    """`folders` first on sys.path, which the kit's child processes inherit."""
    saved = sys.path[:]
    sys.path[:0] = [str(f) for f in folders]
    try:
        yield
    finally:
        sys.path[:] = saved


def collect(nanobind: pathlib.Path | None, jobs: int | None = None) -> Report:
    """Every clause on every subject whose library is installed; `nanobind`
    is the folder the extension was installed into (None leaves it out)."""
    from dlbridge.testing import check, clauses
    from dlbridge.testing._gpu import unavailable as gpu_unavailable
    found = versions()
    if nanobind is None:
        found["nanobind"] = None
    runs = [(s, side) for s in SUBJECTS for side in SIDES
            if s.spec(side) and (s.distribution is None or found[s.distribution])]
    for side in SIDES:
        clauses(side)  # imports the clause modules once, before the threads
    with _on_path([WRAPPERS] + ([nanobind] if nanobind else [])):
        with ThreadPoolExecutor(jobs or len(runs)) as pool:
            verdicts = pool.map(lambda run: check(run[1], run[0].spec(run[1])), runs)
            results = {(s.name, side): v for (s, side), v in zip(runs, verdicts)}
    return Report(found, gpu_unavailable() is None, results)


# -- the section -------------------------------------------------------------------

_NAMES = {s.distribution: s.name for s in SUBJECTS if s.distribution}


def versions_line(report: Report) -> str:
    named = [f"{_NAMES.get(d, d)} {v}" if v else f"{_NAMES.get(d, d)} not installed"
             for d, v in report.versions.items()]
    return f"Run with {', '.join(named)}; GPU: {'yes' if report.gpu else 'none'}."


# An observation's first characters are the ones the report quotes (PyTorch's
# errors can list every backend of its dispatcher).
QUOTED = 400


def _words(observed: str) -> str:
    """An observation as Markdown code on one line, without the addresses that
    change from run to run."""
    words = re.sub(r"\b0x[0-9a-fA-F]{8,}\b", "0x...", " ".join(observed.split()))
    if len(words) > QUOTED:
        words = words[:QUOTED].rstrip() + " ..."
    return f"`` {words} ``" if "`" in words else f"`{words}`"


def render(report: Report) -> str:
    """The section between the markers (without them)."""
    from dlbridge.testing import FAIL, WARN, clauses
    lines = [versions_line(report), ""]
    if not report.gpu:
        lines += ["No CUDA device was usable: every clause of the GPU tier is n/a for every library.", ""]
    failures, warnings = [], []
    for side in SIDES:
        subjects = [s for s in report.ran() if (s.name, side) in report.results]
        verdicts = {s.name: {r.clause: r for r in report.results[s.name, side]} for s in subjects}
        lines += [f"{side.capitalize()} clauses:", "",
                  "| clause | source | " + " | ".join(s.name for s in subjects) + " |",
                  "| --- | --- |" + " --- |" * len(subjects)]
        for c in clauses(side):
            cells = []
            for s in subjects:
                r = verdicts[s.name][c.id]
                cells.append("FAIL" if r.verdict == FAIL else r.verdict)
                if r.verdict in (FAIL, WARN):
                    (failures if r.verdict == FAIL else warnings).append(f"- `{c.id}`, {s.name}: {_words(r.observed)}")
            lines.append(f"| `{c.id}` | {c.source} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["What each failure was, in the library's own words:", ""] + (failures or ["- none"])
    lines += ["", "What each warning was (what is required holds; what is recommended does not):", ""] + \
        (warnings or ["- none"])
    return "\n".join(lines)


def section(text: str) -> str:
    """The generated part of docs/compatibility.md's text, between the markers."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"no {BEGIN} ... {END} in the document")
    return text[start + len(BEGIN):end].strip("\n")


def replace_section(text: str, generated: str) -> str:
    section(text)  # the markers are there
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return f"{text[:start]}\n{generated}\n{text[end:]}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python tools/compatibility.py", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"update {DOC.relative_to(ROOT)} in place")
    parser.add_argument("--jobs", type=int, default=None, help="subjects run at once (default: all)")
    args = parser.parse_args(argv)
    try:
        import nanobind  # noqa: F401
        built: pathlib.Path | None = build_nanobind(ROOT / "build" / "kit-nanobind")
    except ImportError:
        built = None
    generated = render(collect(built, args.jobs))
    if args.write:
        DOC.write_text(replace_section(DOC.read_text(), generated))
    else:
        print(generated)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
