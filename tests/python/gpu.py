"""Whether this machine has a usable GPU, for tests that need one or need its
absence (CI has nvcc but no GPU).

DLBRIDGE_REQUIRE_GPU=1 (tests/gpu/run sets it) turns every skip for want of a
usable GPU, or of a peer's CUDA support, into a failure naming the reason: a
GPU run whose driver, device or peers are unusable must not pass having tested
nothing. DLBRIDGE_UNDER_COMPUTE_SANITIZER=1, to be set by whoever runs these
tests under compute-sanitizer, skips the controls that need two streams to
race, which the tool serialises."""
import importlib
import os
import warnings

import pytest

import dlbridge

INFO = dlbridge.build_info()
NO_GPU = INFO["gpu_count"] == 0
NO_GPU_REASON = f"no usable CUDA device here ({INFO['cuda_status']})"
REQUIRE_GPU = os.environ.get("DLBRIDGE_REQUIRE_GPU") == "1"
UNDER_SANITIZER = os.environ.get("DLBRIDGE_UNDER_COMPUTE_SANITIZER") == "1"


def in_forked_child(checks):
    """Runs `checks` (a function returning 0, or failure bits) in a child
    forked from this process, never letting it return into pytest; asserts
    that it returned 0 (128: it raised)."""
    with warnings.catch_warnings():
        # JAX, imported by another test of the worker, warns that its threads do not survive a fork:
        # the child runs only `checks`, which use no JAX, and exits.
        warnings.filterwarnings("ignore", "os.fork.. was called", RuntimeWarning)
        # Python 3.12 and newer say so of any process with threads (JAX's, the test runner's).
        warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        failures = 128
        try:
            failures = checks()
        finally:
            os._exit(failures)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def skip_or_fail(reason):
    """Skips the test (or the module, at import) for want of `reason`; fails
    it instead under DLBRIDGE_REQUIRE_GPU=1."""
    if REQUIRE_GPU:
        pytest.fail(f"DLBRIDGE_REQUIRE_GPU=1, but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def cuda_peer(name):
    """PyTorch, CuPy or JAX, for a test of them on the GPU: skipped (or
    failed, see above) where it is missing or has no CUDA support. Without a
    usable GPU the module is returned as is: needs_gpu says why."""
    try:
        module = importlib.import_module(name)
    except ImportError:
        skip_or_fail(f"{name} is not installed")
    if not NO_GPU:
        if name == "jax":
            has_cuda = any(d.platform == "gpu" for d in module.devices())
        else:
            has_cuda = module.cuda.is_available()
        if not has_cuda:
            skip_or_fail(f"this {name} has no CUDA support")
    return module


needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="a GPU is present: the no-GPU behaviour cannot be observed")
# The fixture (conftest.py) calls skip_or_fail(NO_GPU_REASON) without a GPU.
needs_gpu = pytest.mark.usefixtures("usable_gpu")
race_control = pytest.mark.skipif(UNDER_SANITIZER, reason="DLBRIDGE_UNDER_COMPUTE_SANITIZER=1: compute-sanitizer "
                                                          "serialises kernels, so the race this control expects cannot happen")
