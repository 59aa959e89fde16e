"""Fixtures shared by the test modules here."""
import os

import pytest

import gpu


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "peers_only: runs no dlbridge code beyond its import: the conformance kit on other libraries' "
                   "subjects or on seeded bugs. tests/run's asan-python stage deselects these (docs/hardening.md).")


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
