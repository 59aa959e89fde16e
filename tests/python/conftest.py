"""Fixtures shared by the test modules here, and the markers they use."""
import gc
import os
import shutil
import subprocess
import sys

import pytest

import consumers
import gpu
from paths import DOWNSTREAM


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "peers_only: runs no dlbridge code beyond its import: the conformance kit on other libraries' "
                   "subjects or on seeded bugs. tests/run's asan-python stage deselects these (docs/hardening.md).")
    config.addinivalue_line(
        "markers", "supervision: the kit's or the doctor's handling of subjects that crash, hang, exit, fork or "
                   "write too much, in child processes: the dlbridge code they reach is what the kit's and the "
                   "doctor's own tests on dlbridge run (test_kit.py::test_dlbridge_passes_every_applicable_clause, "
                   "test_doctor.py's main-job tests). tests/run's asan-python stage deselects these too.")
    config.addinivalue_line(
        "markers", "no_sanitized_code: runs no dlbridge code the sanitized build instruments beyond its import "
                   "(Meson's configuration, C++ programs built without the sanitizers, mypy's reading of the "
                   "stubs, the GPU suites' skips). tests/run's asan-python stage deselects these too.")
    config.addinivalue_line(
        "markers", "unsanitized(reason): cannot run under the sanitizers, for `reason` (valgrind, or a soak whose "
                   "memory ASan's quarantine holds): skipped where the ASan runtime is preloaded; tests/run's "
                   "python stage runs these, its asan-python stage deselects them.")
    config.addinivalue_line(
        "markers", "numpy_jax: the outcome depends on the NumPy or JAX version (an exchange with either, or a "
                   "comparison with what it does). tests/run's floor stage runs these with the oldest supported.")
    config.addinivalue_line(
        "markers", "any_python: the outcome does not depend on the Python version (C++ programs, a compiler's "
                   "verdict on dlbridge's headers, Meson's configuration, the benchmarks' smoke pass, what the CUDA "
                   "backend itself does, which the versions stage does not build). tests/run's versions stage "
                   "deselects these.")
    config.addinivalue_line(
        "markers", "consumer_build: uses a compiled consumer package built against the installed dlbridge (set "
                   "by pytest_collection_modifyitems on every test using the fixture builds_base, as every such "
                   "build does). tests/run's versions stage runs these on its newest Python only: dlbridge's "
                   "sources branch on the Python version at 3.13 alone, and Cython's code for the Python between "
                   "is run there by dlbridge's own modules.")
    config.addinivalue_line(
        "markers", "needs_torch: uses PyTorch. tests/run's versions stage, on Pythons for which PyPI's PyTorch "
                   "brings CUDA, deselects these.")


# The files that take longest, longest first (as measured in tests/run's
# python stage, docs/hardening.md): pytest-xdist hands each worker a whole
# file at a time in collection order where told to keep it (tests/run's
# --no-loadscope-reorder), so the short files left at the end let both
# workers finish together. Those sharing a consumer build
# (test_cython_consumers.py and test_routes.py: the Cython example) are kept
# apart, so that one worker does not wait for the other's build.
LONGEST_FIRST = ("project/test_benchmarks.py", "kit/test_kit.py", "project/test_doctor.py",
                 "consumers/test_cython_consumers.py", "consumers/test_cpp_consumers.py", "project/test_stubs.py",
                 "consumers/test_bindings.py", "project/test_build.py", "exchange/test_routes.py",
                 "kit/test_kit_libraries.py", "consumers/test_consumer_template.py", "consumers/test_kernels.py")


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    missing = [name for name in LONGEST_FIRST if not os.path.isfile(os.path.join(here, name))]
    if missing:
        raise pytest.UsageError(f"conftest.py's LONGEST_FIRST names test files that are not there: {missing}")
    asan = "libasan" in os.environ.get("LD_PRELOAD", "")
    for item in items:
        if "builds_base" in getattr(item, "fixturenames", ()):  # every consumer build's fixture uses it
            item.add_marker(pytest.mark.consumer_build)
        unsanitized = item.get_closest_marker("unsanitized")
        if unsanitized and asan:
            item.add_marker(pytest.mark.skip(reason=unsanitized.kwargs["reason"]))
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(os.path.relpath(item.path, here).replace(os.sep, "/"), len(rank)))


def pytest_collection_finish(session):
    """What collection loaded (the test modules, NumPy, PyTorch, JAX: a
    large heap) is set aside from the garbage collector, so that the tests'
    many gc.collect() calls, which must find what each test left, scan what
    the tests made and not the whole of it again."""
    gc.collect()
    gc.freeze()


@pytest.fixture
def usable_gpu():
    """Behind gpu.needs_gpu: skips the test where no CUDA device is usable, or
    fails it under DLBRIDGE_REQUIRE_GPU=1."""
    if gpu.NO_GPU:
        gpu.skip_or_fail(gpu.NO_GPU_REASON)


@pytest.fixture
def deliberate_crashes(monkeypatch):
    """For tests whose child processes crash on purpose (the conformance
    kit's seeded bugs): under ASan (tests/run asan-python) such a crash stays
    a signal the test can see, and is no sanitizer report."""
    if os.environ.get("ASAN_OPTIONS"):
        monkeypatch.setenv("ASAN_OPTIONS", os.environ["ASAN_OPTIONS"] + ":handle_segv=0:handle_abort=0")


# The compiled consumers, each built once per run (consumers.built_once).

@pytest.fixture(scope="session")
def builds_base(tmp_path_factory):
    """A folder the run's workers share (pytest-xdist's are below one)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "consumer-builds"


@pytest.fixture(scope="session")
def cython_example(builds_base):
    """tests/downstream/cython installed: (target folder, build folder)."""
    source = DOWNSTREAM / "cython"
    folder = consumers.built_once(source, builds_base, lambda f: consumers.pip_install(source, f))
    return folder / "target", folder / "build"


@pytest.fixture(scope="session")
def consumer_template(builds_base):
    """A copy of tests/downstream/template, as a user makes one, installed: the target folder."""
    source = DOWNSTREAM / "template"

    def build(folder):
        shutil.copytree(source, folder / "my-kernels")  # nowhere near this checkout
        consumers.pip_install(folder / "my-kernels", folder)

    return consumers.built_once(source, builds_base, build) / "target"


@pytest.fixture(scope="session")
def kernels_package(builds_base):
    """tests/downstream/kernels installed: the target folder."""
    source = DOWNSTREAM / "kernels"
    return consumers.built_once(source, builds_base, lambda f: consumers.pip_install(source, f)) / "target"


@pytest.fixture(scope="session")
def bindings(builds_base):
    """tests/downstream/bindings (dlb_nanobind, dlb_pybind11) built with Meson: the build folder."""
    pytest.importorskip("nanobind")
    pytest.importorskip("pybind11")
    consumers.skip_unless_installed("the binding modules")
    source = DOWNSTREAM / "bindings"

    def build(folder):
        setup = ["meson", "setup", str(folder / "build"), str(source), f"-Dpython={sys.executable}"]
        # tests/run's asan-python stage sanitizes the modules too: the casters and
        # dlbridge's headers run inside them.
        setup += consumers.build_options()
        for step in (setup, ["meson", "compile", "-C", str(folder / "build")]):
            result = subprocess.run(step, capture_output=True, text=True, timeout=900,
                                    env=consumers.build_environment())
            assert result.returncode == 0, result.stdout + result.stderr

    return consumers.built_once(source, builds_base, build) / "build"
