"""The CUDA backend on machines without a GPU (CI): it is built whenever nvcc
is found, the extension imports, and asking for GPU memory fails cleanly with
the reason. The GPU suite itself lives in tests/cuda (C++) and runs on a GPU."""
import shutil

import pytest

import dlbridge

INFO = dlbridge.build_info()
NO_GPU = INFO["gpu_count"] == 0
needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="a GPU is present: the no-GPU behaviour cannot be observed")

CREATE = {
    "empty": lambda device: dlbridge.empty((2, 3), device=device),
    "zeros": lambda device: dlbridge.zeros((2, 3), dtype="float8_e8m0fnu", device=device),
    "full": lambda device: dlbridge.full((2, 3), 1.5, dtype="bfloat16", device=device),
}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (the CUDA toolkit) is not installed here")
def test_backend_is_built_where_nvcc_is():
    assert INFO["cuda"] is True
    assert INFO["cuda_version"] is not None


@needs_no_gpu
def test_build_info_says_why_there_is_no_gpu():
    assert INFO["gpu_count"] == 0
    assert INFO["cuda_status"]  # the driver's reason, or that the backend was not built


@needs_no_gpu
@pytest.mark.parametrize("make", list(CREATE))
@pytest.mark.parametrize("device", ["cuda", "cuda:1", "cuda_host", "cuda_managed", (2, 0)])
def test_creating_gpu_memory_without_a_gpu_is_a_clean_error(make, device):
    with pytest.raises(RuntimeError, match=r"^no CUDA device is available \(.+\)$"):
        CREATE[make](device)


@needs_no_gpu
def test_fill_value_is_checked_before_the_device_is_asked():
    # The same errors as on the CPU, whatever the device.
    with pytest.raises(OverflowError, match="out of bounds for uint8"):
        dlbridge.full(3, 300, dtype="uint8", device="cuda")
