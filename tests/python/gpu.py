"""Whether this machine has a usable GPU, for tests that need one or need its
absence (CI has nvcc but no GPU)."""
import pytest

import dlbridge

INFO = dlbridge.build_info()
NO_GPU = INFO["gpu_count"] == 0
needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="a GPU is present: the no-GPU behaviour cannot be observed")
needs_gpu = pytest.mark.skipif(NO_GPU, reason=f"no usable CUDA device here ({INFO['cuda_status']})")
