"""Fixtures shared by the test modules here."""
import pytest

import gpu


@pytest.fixture
def usable_gpu():
    """Behind gpu.needs_gpu: skips the test where no CUDA device is usable, or
    fails it under DLBRIDGE_REQUIRE_GPU=1."""
    if gpu.NO_GPU:
        gpu.skip_or_fail(gpu.NO_GPU_REASON)
