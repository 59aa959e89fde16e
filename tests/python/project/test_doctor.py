"""The doctor, `python -m dlbridge`: what it reports of the libraries installed,
and that a broken library becomes a row saying what happened, never the
doctor's own end. The broken libraries are fakes, put first on PYTHONPATH
under names the doctor probes: array_api_strict and cupy."""
import importlib.util
import json
import os
import platform
import subprocess
import sys
import textwrap
import types

import pytest

import dlbridge
from dlbridge import _probe
from dlbridge.__main__ import next_steps, shell_python
from peers import numpy_from_dlpack_writable
from processes import gone

# Enough of array_api_strict's and of CuPy's API for the doctor's probes, over NumPy.
FAKE = """
import types
import numpy

float32 = numpy.float32
__version__ = "1.0"

class Array:
    def __init__(self, a):
        self._array = a
    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)
    def __dlpack_device__(self):
        return self._array.__dlpack_device__()
    data = property(lambda self: types.SimpleNamespace(ptr=self._array.ctypes.data))
    def get(self):
        return self._array

def asarray(values, dtype=None):
    return Array(numpy.asarray(values, dtype=dtype))

def from_dlpack(x):
    return Array(numpy.from_dlpack(x))
"""

# The real libraries probed beside the fakes: those installed (tests/run's versions stage has no PyTorch).
REAL = tuple(name for name in ("numpy", "torch", "jax") if importlib.util.find_spec(name))
# The doctor's options for the tests of hostile fakes: the two fakes and NumPy beside them (a row the others'
# ends must leave alone), not PyTorch and JAX, whose imports would be most of each run.
FAKES_AND_NUMPY = ["--library", "array_api_strict", "--library", "cupy", "--library", "numpy"]


def with_from_dlpack(body: str) -> str:
    """The fake library, whose from_dlpack runs `body` (one line)."""
    return FAKE + f"\ndef from_dlpack(x):\n    {body}\n"


def doctor(tmp_path, *args, **fakes):
    """python -m dlbridge ARGS, with each fakes[name] (a module's source) shadowing that library."""
    for name, source in fakes.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + [p for p in sys.path if p]))
    # A segfault must reach the doctor as one, also where the tests run under ASan (whose handler exits 1).
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "handle_segv=0"]))
    return subprocess.run([sys.executable, "-m", "dlbridge", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def rows(result) -> dict:
    report = json.loads(result.stdout)  # valid JSON, whatever the libraries printed
    return {row["library"]: row for row in report["exchanges"]}


@pytest.mark.numpy_jax
@pytest.mark.needs_torch
def test_main_job_reports_zero_copy_with_installed_libraries():
    result = subprocess.run([sys.executable, "-m", "dlbridge", "--json"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["build"]["dlpack_version"] == "1.3"
    exchanges = {e["library"]: e for e in report["exchanges"]}
    assert list(exchanges) == [lib.name for lib in _probe.LIBRARIES]
    for library in ("numpy", "torch", "jax", "array_api_strict"):
        assert exchanges[library]["into_dlbridge"] == "zero-copy", exchanges[library]
        assert exchanges[library]["from_dlbridge"] == "zero-copy", exchanges[library]
    # What each makes of writable and read-only arrays, as the installed version does.
    for library in ("numpy", "array_api_strict"):
        numpy_keeps = numpy_from_dlpack_writable(True, 6)
        assert exchanges[library]["writable_arrives"] == ("writable" if numpy_keeps else "read-only")
        assert exchanges[library]["read_only_arrives"] == "read-only"
    assert exchanges["torch"]["writable_arrives"] == exchanges["torch"]["read_only_arrives"] == "writable"
    assert exchanges["jax"]["writable_arrives"] == "immutable"
    assert exchanges["jax"]["read_only_arrives"].startswith(
        "refused: BufferError: a read-only array cannot be exported as a legacy DLPack capsule")
    for library in ("numpy", "torch", "jax", "array_api_strict"):
        assert exchanges[library]["transposed_arrives"] == "same values", exchanges[library]


def test_main_job_checks_dlbridge_and_the_buffer_exporters_with_no_library_installed(tmp_path):
    """As in a fresh virtual environment: the doctor sees dlbridge alone (-S
    hides site-packages, and the path holds a link to the package only)."""
    (tmp_path / "dlbridge").symlink_to(os.path.dirname(dlbridge.__file__))
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    as_json, as_text = (subprocess.run([sys.executable, "-S", "-m", "dlbridge", *flags], capture_output=True,
                                       text=True, env=env, timeout=300) for flags in (["--json"], []))
    for result in (as_json, as_text):
        assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(as_json.stdout)
    assert [(s["subject"], s["side"]) for s in report["conformance"]] == [
        ("dlbridge.Array", "producer"), ("dlbridge.from_dlpack", "consumer"), ("memoryview", "producer"),
        ("array.array", "producer"), ("bytes", "producer")]
    for subject in report["conformance"]:
        assert subject["summary"]["fail"] == 0, subject
        assert subject["summary"]["pass"] > 0, subject
    assert {e["into_dlbridge"] for e in report["exchanges"]} == {"not installed"}
    text = as_text.stdout
    assert "The DLPack conformance kit on what every Python has (python -m dlbridge check):" in text
    # How the hints name the interpreter, as the child (-S: no virtual environment's prefix) sees it.
    python = subprocess.run([sys.executable, "-S", "-c", "from dlbridge.__main__ import shell_python; "
                             "print(shell_python())"], capture_output=True, text=True, env=env).stdout.strip()
    # No GPU here: PyTorch's CPU build, and no CuPy; the kit's command once a library is installed.
    assert f"To check the libraries not installed too: {python} -m pip install numpy jax array-api-strict\n" in text
    assert (f"PyTorch's CPU build (no GPU is usable here; PyPI's torch brings CUDA's libraries): {python} -m pip "
            "install torch --index-url https://download.pytorch.org/whl/cpu\n") in text
    assert (f"The kit's report on an array library, once one is installed (NumPy: {python} -m pip install numpy): "
            f"{python} -m dlbridge check --producer dlbridge.testing.libraries:numpy_array") in text
    assert "a dlbridge array arrives" not in text  # that table has no row when no library is installed
    assert "\n\n\n" not in text  # one blank line between the parts
    assert [line for line in text.splitlines() if "cupy" in line and "pip install" in line] == []


def exchange(library, installed):
    """A doctor's row of `library`, installed and exchanging or not installed."""
    fields = ["zero-copy", "zero-copy", "writable", "read-only", "same values"] if installed else \
        ["not installed", "not installed", "-", "-", "-"]
    return _probe.Exchange(library, "1.0" if installed else "-", *fields)


@pytest.mark.parametrize("gpu", [False, True])
def test_next_steps_are_runnable_as_printed(gpu, monkeypatch):
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.setattr(sys, "base_prefix", sys.prefix)  # as pyenv's or python.org's python3
    rows = [exchange("numpy", False), exchange("torch", True), exchange("jax", False),
            exchange("array_api_strict", True), exchange("cupy", False)]
    steps = next_steps(rows, gpu=gpu)
    if gpu:
        assert steps[0] == "To check the libraries not installed too: python3 -m pip install numpy jax cupy-cuda12x " \
                           "(with CUDA 13: cupy-cuda13x)"
    else:
        assert steps[0] == "To check the libraries not installed too: python3 -m pip install numpy jax"
    # The first installed library the kit has factories for.
    assert steps[-1] == ("The kit's report on torch: python3 -m dlbridge check --producer "
                         "dlbridge.testing.libraries:torch_tensor --consumer dlbridge.testing.libraries:torch_from_dlpack"
                         " (docs/check-your-library.md)")
    assert len(steps) == 2
    # PyTorch missing on a machine without a GPU: its CPU build, never PyPI's CUDA one.
    rows[1] = exchange("torch", False)
    assert any(line.endswith("python3 -m pip install torch --index-url https://download.pytorch.org/whl/cpu")
               for line in next_steps(rows, gpu=False))
    assert "python3 -m pip install numpy torch jax cupy" in next_steps(rows, gpu=True)[0]
    # Elsewhere (macOS, aarch64) PyPI's PyTorch is a CPU build.
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    assert "python3 -m pip install numpy torch jax\n" in "\n".join(next_steps(rows, gpu=False)) + "\n"


def test_hints_name_the_virtual_environment_the_shell_has_not_activated(monkeypatch, tmp_path):
    """install.sh's .venv for Debian's system Python: `python3 -m pip` would
    meet PEP 668 there, so the hints name the environment's interpreter until
    it is activated."""
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    monkeypatch.setattr(sys, "prefix", str(tmp_path / ".venv"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / ".venv" / "bin" / "python"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    assert shell_python() == ".venv/bin/python"
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / ".venv"))
    assert shell_python() == "python"


def test_consumers_that_ignore_or_refuse_strides():
    """What JAX 0.6.0 to 0.7.1 do with a column-major array (read its memory
    as row-major), done here with NumPy, is reported; a consumer that refuses
    the layout is reported as refusing it."""
    numpy = next(lib for lib in _probe.LIBRARIES if lib.name == "numpy")
    row_major = _probe.Library(**{**vars(numpy), "from_dlpack":
                                  lambda np, a: np.from_dlpack(a).ravel(order="K").reshape(a.shape)})

    def refuse(np, a):
        if not np.from_dlpack(a).flags.c_contiguous:
            raise BufferError("row-major only")
        return np.from_dlpack(a)

    refusing = _probe.Library(**{**vars(numpy), "from_dlpack": refuse})
    assert _probe.check(numpy).transposed_arrives == "same values"
    assert _probe.check(row_major).transposed_arrives == "WRONG VALUES: the library ignored the strides"
    assert _probe.check(refusing).transposed_arrives == "refused: BufferError: row-major only"


def test_wrong_values_fail_the_job(tmp_path):
    ignores_strides = with_from_dlpack("return Array(numpy.from_dlpack(x).ravel(order='K').reshape(x.shape))")
    result = doctor(tmp_path, array_api_strict=ignores_strides)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "WRONG VALUES: the library ignored the strides" in result.stdout
    for library in REAL:
        assert f"\n{library} " in result.stdout


@pytest.mark.supervision
def test_not_installed_and_import_failed_are_told_apart(tmp_path):
    """A library whose own dependency is missing did not import: it is installed. A library that
    does not import is reported, and the job passes: it checks dlbridge's exchanges."""
    nothing = _probe.Library(**{**vars(_probe.LIBRARIES[0]), "name": "nothing", "module": "dlbridge_no_such_module"})
    assert _probe.check(nothing) == _probe.Exchange("nothing", "-", "not installed", "not installed", "-", "-", "-")

    result = doctor(tmp_path, "--json", array_api_strict="import dlbridge_no_such_dependency\n" + FAKE)
    assert result.returncode == 0, result.stdout + result.stderr
    found = rows(result)
    reason = "import failed: ModuleNotFoundError: No module named 'dlbridge_no_such_dependency'"
    assert found["array_api_strict"] == {"library": "array_api_strict", "version": "-", "into_dlbridge": reason,
                                         "from_dlbridge": reason, "writable_arrives": "-", "read_only_arrives": "-",
                                         "transposed_arrives": "-"}
    for library in REAL:
        assert found[library]["into_dlbridge"] == "zero-copy", found[library]


# name: (the library's code, its row's state when from_dlpack runs it; when its import runs it, "import " + that)
HOSTILE = {
    "SystemExit": ("raise SystemExit(3)", "failed: SystemExit: 3"),
    "KeyboardInterrupt": ("raise KeyboardInterrupt", "failed: KeyboardInterrupt"),
    "segfault": ("import ctypes; ctypes.string_at(0)", "crashed: signal 11 (SIGSEGV)"),
    "os._exit": ("import os; os._exit(3)", "crashed: exit status 3"),
}


@pytest.mark.supervision
@pytest.mark.parametrize("behaviour", HOSTILE)
def test_a_library_that_exits_or_crashes_is_a_row(tmp_path, behaviour):
    """At import (array_api_strict's row) and in an exchange (cupy's), in one run. An exchange that
    did not finish fails the job; a library that did not import does not."""
    code, state = HOSTILE[behaviour]
    result = doctor(tmp_path, "--json", *FAKES_AND_NUMPY, array_api_strict=code + "\n" + FAKE,
                    cupy=with_from_dlpack(code))
    assert result.returncode == 1, result.stdout + result.stderr
    found = rows(result)
    assert found["array_api_strict"]["into_dlbridge"] == found["array_api_strict"]["from_dlbridge"] == "import " + state
    assert found["array_api_strict"]["version"] == "-"
    cupy = found["cupy"]
    assert (cupy["version"], cupy["into_dlbridge"], cupy["from_dlbridge"]) == ("1.0", "zero-copy", state)
    if state.startswith("crashed"):  # the fields it had not reached
        assert cupy["writable_arrives"] == cupy["read_only_arrives"] == cupy["transposed_arrives"] == "-"
    else:
        assert cupy["transposed_arrives"] == "refused: " + state.removeprefix("failed: ")
    assert list(found) == ["numpy", "array_api_strict", "cupy"]
    assert found["numpy"]["into_dlbridge"] == "zero-copy", found["numpy"]


@pytest.mark.supervision
def test_a_crash_is_told_after_the_report_not_in_it(tmp_path):
    result = doctor(tmp_path, *FAKES_AND_NUMPY, cupy=with_from_dlpack("import ctypes; ctypes.string_at(0)"))
    assert result.returncode == 1
    assert "Fatal Python error" not in result.stdout
    assert ("python -m dlbridge: the probe of cupy crashed; what it wrote on standard error:\n"
            "Fatal Python error: Segmentation fault") in result.stderr


@pytest.mark.supervision
def test_helpers_forked_at_import_neither_hold_a_row_nor_outlive_it(tmp_path, monkeypatch):
    """A library that starts a helper process at import (a server, a pool),
    which inherits the probe's pipe: the row ends when the probe does, and
    so does the helper."""
    helper = textwrap.dedent("""
        import os, time
        if os.fork() == 0:
            with open(os.environ["HELPER_PID"], "a") as file:
                file.write(f"{os.getpid()}\\n")
            time.sleep(600)
            os._exit(0)
    """)
    monkeypatch.setenv("HELPER_PID", str(tmp_path / "helpers"))
    # Were the pipe's end awaited, the crash would read "timed out after 120 s".
    result = doctor(tmp_path, "--json", "--timeout", "120", *FAKES_AND_NUMPY, array_api_strict=helper + FAKE,
                    cupy=helper + with_from_dlpack("import ctypes; ctypes.string_at(0)"))
    found = rows(result)
    assert found["array_api_strict"]["into_dlbridge"] == "zero-copy", found["array_api_strict"]
    assert found["cupy"]["from_dlbridge"] == "crashed: signal 11 (SIGSEGV)"
    helpers = [int(pid) for pid in (tmp_path / "helpers").read_text().split()]
    assert len(helpers) == 2 and all(gone(pid) for pid in helpers)


@pytest.mark.supervision
def test_a_library_that_hangs_is_a_row(tmp_path):
    hang = "import time; time.sleep(600)"
    # Limits many times what the fake's import and first exchange take under ASan on a loaded machine.
    result = doctor(tmp_path, "--json", "--import-timeout", "15", "--timeout", "10", *FAKES_AND_NUMPY,
                    array_api_strict=hang + "\n" + FAKE, cupy=with_from_dlpack(hang))
    found = rows(result)
    assert found["array_api_strict"]["into_dlbridge"] == "import timed out after 15 s"
    assert found["cupy"]["from_dlbridge"] == "timed out after 10 s"
    assert result.returncode == 1, result.stdout + result.stderr
    # Short limits on a busy machine may cut NumPy's probe short too: its row is there.
    assert list(found) == ["numpy", "array_api_strict", "cupy"]


@pytest.mark.supervision
def test_prints_and_broken_versions_are_rows(tmp_path):
    noisy = """
        import os, sys
        print("hello from the library")
        sys.stdout.write("{ not json")
        os.write(1, b'{"exchanges": []}\\n')
        print("and on stderr", file=sys.stderr)
    """
    raising = "\ndef __getattr__(name):\n    raise RuntimeError('no version here')\n"
    result = doctor(tmp_path, "--json", array_api_strict=textwrap.dedent(noisy) + FAKE + "del __version__" + raising,
                    cupy=FAKE + "__version__ = (1, 2)\n")
    assert result.returncode == 0, result.stdout + result.stderr
    found = rows(result)
    assert found["array_api_strict"]["version"] == "version unknown (RuntimeError: no version here)"
    assert found["cupy"]["version"] == "version unknown (__version__ is tuple, not str)"
    for library in ("array_api_strict", "cupy", *REAL):
        assert found[library]["into_dlbridge"] == found[library]["from_dlbridge"] == "zero-copy", found[library]


def test_a_module_without_a_version():
    assert _probe._version(types.ModuleType("bare")) == "version unknown (no __version__)"


@pytest.mark.supervision
@pytest.mark.parametrize("args", [[], ["--json"], ["--cflags"]])
def test_a_reader_that_goes_away_gets_no_traceback(args):
    """python -m dlbridge | head, with the reader gone before the doctor writes."""
    process = subprocess.Popen([sys.executable, "-m", "dlbridge", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=300) == 141
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_only_the_libraries_named_are_probed():
    result = subprocess.run([sys.executable, "-m", "dlbridge", "--json", "--library", "array_api_strict",
                             "--library", "numpy"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert list(rows(result)) == ["numpy", "array_api_strict"]  # in the doctor's order
    assert len(json.loads(result.stdout)["conformance"]) == 5  # the kit's part is the same
    result = subprocess.run([sys.executable, "-m", "dlbridge", "--library", "numpy", "--library", "tensorflow"],
                            capture_output=True, text=True, timeout=300)
    assert (result.returncode, result.stdout) == (2, "")
    names = ", ".join(repr(lib.name) for lib in _probe.LIBRARIES)
    assert result.stderr.endswith(f"python -m dlbridge: error: argument --library: invalid choice: 'tensorflow' "
                                  f"(choose from {names})\n")


def test_version():
    result = subprocess.run([sys.executable, "-m", "dlbridge", "--version"], capture_output=True, text=True)
    assert result.returncode == 0
    info = dlbridge.build_info()
    assert result.stdout.startswith(f"dlbridge {dlbridge.__version__} (DLPack 1.3, {info['compiler']}, c++20, ")


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_timeouts_must_be_positive_seconds(value):
    for option in ("--timeout", "--import-timeout"):
        result = subprocess.run([sys.executable, "-m", "dlbridge", option, value], capture_output=True, text=True)
        assert result.returncode == 2
        assert result.stderr.endswith(
            f"python -m dlbridge: error: argument {option}: expected a positive number of seconds, got '{value}'\n")
