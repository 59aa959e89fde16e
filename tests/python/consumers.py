"""Consumer packages built against the INSTALLED dlbridge, as their authors
build them (pip, no build isolation; at -O0: build_options): the Cython
example, the template, the kernels package, the nanobind and pybind11
bindings (conftest.py's session fixtures).

Each is built once per run: into a folder named by a digest of what the
build depends on (its sources, the dlbridge installed, the interpreter, the
tools' versions, the sanitizer), under $DLBRIDGE_TEST_BUILDS (tests/run sets
it anew for each run, so the pytest stages on the release build share their
builds and asan-python makes sanitized ones), else under pytest's temporary
folder of the run, which its workers share. A lock lets one worker build
while the other waits for it."""
import contextlib
import fcntl
import gc
import hashlib
import importlib.metadata
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap
import warnings
from typing import Callable

import pytest

import dlbridge



# A source tree (an editable install, or the build folder on PYTHONPATH) has
# no headers beside the package.
INSTALLED = os.path.isdir(dlbridge.get_include())


def clang_with_modules() -> str | None:
    """A clang++ that can build the dlbridge module (>= 17), or None."""
    for name in (os.environ.get("CXX", ""), "clang++-19", "clang++-18", "clang++-17", "clang++"):
        path = shutil.which(name) if name else None
        if not path:
            continue
        version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
        m = re.search(r"clang version (\d+)", version)
        if m and int(m.group(1)) >= 17:
            return path
    return None


def skip_unless_installed(what: str) -> None:
    """Skips where dlbridge is no installed wheel, which `what` builds against."""
    if not INSTALLED:
        pytest.skip(f"dlbridge at {os.path.dirname(dlbridge.__file__)} is not an installed wheel (no "
                    f"{dlbridge.get_include()}); {what} builds against an installed dlbridge: pip install .")


def build_options(*cpp_args: str) -> list[str]:
    """Meson's options for a consumer package the tests build: -O0, as what
    these packages cost is their compile time, which optimization lengthens,
    and their small kernels run briefly (dlbridge's headers built as released
    run in dlbridge's own modules and in the copy engine's benchmark,
    benchmarks/copy_engine.py); in tests/run's asan-python stage
    (DLBRIDGE_TEST_SANITIZE names the sanitizers) sanitized too, every report
    aborting, with `cpp_args` (docs/hardening.md)."""
    options = ["-Doptimization=0"]
    sanitize = os.environ.get("DLBRIDGE_TEST_SANITIZE")
    if sanitize:
        options += [f"-Db_sanitize={sanitize}",
                    "-Dcpp_args=" + " ".join(["-fno-sanitize-recover=all", *cpp_args])]
    return options


def build_environment() -> dict[str, str]:
    """The environment for building a consumer package: this process's, less
    the ASan runtime that tests/run's asan-python stage preloads (and its
    PYTHONMALLOC=malloc), under which pip, Meson, Cython and the compiler run
    several times slower. The sanitized dlbridge those import for its flags
    (python -m dlbridge --cflags) loads the runtime as it is linked against
    it (verify_asan_link_order=0); the package built is sanitized all the same."""
    env = dict(os.environ)
    if "libasan" in env.get("LD_PRELOAD", ""):
        del env["LD_PRELOAD"]
        env.pop("PYTHONMALLOC", None)
        env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "verify_asan_link_order=0"]))
    return env


def pip_install(source: pathlib.Path, root: pathlib.Path) -> pathlib.Path:
    """Builds the package at `source` in root/build and installs it into
    root/target, which it returns; skips where dlbridge is no installed wheel.
    tests/run's asan-python stage (DLBRIDGE_TEST_SANITIZE) sanitizes the
    package too, as dlbridge's headers run inside it; not for misaligned
    references: typed views accept unaligned NumPy data (docs/hardening.md)."""
    skip_unless_installed(source.name)
    cmd = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
           "--disable-pip-version-check", "--target", str(root / "target"),
           f"--config-settings=build-dir={root / 'build'}", str(source)]
    cmd[-1:-1] = [f"--config-settings=setup-args={option}" for option in build_options("-fno-sanitize=alignment")]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=build_environment())
    assert result.returncode == 0, result.stdout + result.stderr
    return root / "target"


def _digest(source: pathlib.Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(source)).encode() + b"\0" + path.read_bytes())
    package = pathlib.Path(dlbridge.__file__).resolve().parent
    for record in sorted(package.parent.glob("dlbridge-*.dist-info/RECORD")):
        digest.update(record.read_bytes())
    digest.update(str(package).encode())
    tools = []
    for name in ("Cython", "meson", "meson-python", "nanobind", "pybind11"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            tools.append(f"{name} {importlib.metadata.version(name)}")
    digest.update(f"{sys.executable} {tools} {os.environ.get('DLBRIDGE_TEST_SANITIZE')}".encode())
    return digest.hexdigest()[:16]


def built_once(source: pathlib.Path, base: pathlib.Path, build: Callable[[pathlib.Path], None]) -> pathlib.Path:
    """The folder in which `build(folder)` built `source`, built by the first
    caller of this run; a failed build fails every caller."""
    root = pathlib.Path(os.environ.get("DLBRIDGE_TEST_BUILDS") or base)
    folder = root / f"{source.name}-{_digest(source)}"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (folder / "built").touch()
    return folder


def run_example(example, code):
    """Runs `code` in this interpreter, in a namespace of its own that has
    NumPy, PyTorch where the code names it, dlbridge and the Cython example
    (as np, torch, dlbridge, ex), with warnings as errors; JAX's 64-bit
    switch, which some code turns on, is put back as it was. In the test's
    own process: a fresh interpreter per call cost each test the imports of
    NumPy, PyTorch and JAX again (several seconds under the sanitizers)."""
    target, _ = example
    if str(target) not in sys.path:
        sys.path.insert(0, str(target))
    import numpy
    import dlb_example
    namespace = {"__name__": "example_code", "gc": gc, "warnings": warnings, "np": numpy, "dlbridge": dlbridge,
                 "ex": dlb_example}
    if "torch" in code:  # only where the code uses it: tests/run's versions stage has none
        import torch
        namespace["torch"] = torch
    x64 = _jax_x64()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            exec(compile(textwrap.dedent(code), "<example code>", "exec"), namespace)
    finally:
        if _jax_x64() != x64:
            sys.modules["jax"].config.update("jax_enable_x64", x64)


def _jax_x64() -> bool:
    """JAX's 64-bit switch, False where JAX is not imported (its default)."""
    jax = sys.modules.get("jax")
    return bool(jax and jax.config.jax_enable_x64)
