"""The CUDA backend on machines without a GPU (CI): it is built whenever nvcc
is found, the extension imports, asking for GPU memory or GPU work fails
cleanly with the reason, and every argument check that needs no device runs.
Arrays "on cuda:0" here come from a CUDA array interface over host memory,
which dlbridge labels cuda:0 and never reads on the host. The GPU suites are
tests/cuda (C++) and test_cuda_gpu.py."""
import ctypes
import importlib.machinery
import pathlib
import re
import shutil

import numpy as np
import pytest

import dlbridge
from dlbridge.testing._abi import ManagedTensor, Producer
from exporters import CudaInterface, on_cuda
from gpu import INFO, in_forked_child, needs_no_gpu
from messages import exactly

pytestmark = pytest.mark.numpy_jax  # NumPy's or JAX's arrays and dtypes as inputs: the floor stage runs it again

NO_DEVICE = r"^no CUDA device is available \(.+\)$"

CREATE = {
    "empty": lambda device: dlbridge.empty((2, 3), device=device),
    "zeros": lambda device: dlbridge.zeros((2, 3), dtype="float8_e8m0fnu", device=device),
    "full": lambda device: dlbridge.full((2, 3), 1.5, dtype="bfloat16", device=device),
}


@pytest.mark.any_python  # Meson's configuration (the versions stage builds without the backend on purpose)
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (the CUDA toolkit) is not installed here")
def test_backend_is_built_where_nvcc_is():
    assert INFO["cuda"] is True
    assert INFO["cuda_version"] is not None


def test_one_module_holds_the_cuda_runtime():
    # dlbridge._backend links dlbridge_cuda (the backend, with the static CUDA
    # runtime, or the implementation that refuses GPU work); every other
    # module reaches it through _backend.pxd, so a process holds one runtime.
    package = pathlib.Path(dlbridge.__file__).parent
    modules = {path.name.split(".")[0]: path.read_bytes() for path in package.iterdir()
               if path.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))}
    assert set(modules) == {"_types", "_dlpack", "_backend", "_array", "_importers"}, set(modules)
    marker = b"cudaStreamCreateWithFlags" if INFO["cuda"] else b"built without the CUDA backend"
    assert [name for name, code in modules.items() if marker in code] == ["_backend"]


@needs_no_gpu
def test_build_info_says_why_there_is_no_gpu():
    assert INFO["gpu_count"] == 0
    assert INFO["cuda_status"]  # the driver's reason, or that the backend was not built


def _driver_loads():
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


@pytest.mark.any_python  # the backend's: the versions stage builds without it
@pytest.mark.skipif(not INFO["cuda"], reason="dlbridge was built without the CUDA backend (no nvcc)")
def test_a_machine_without_a_driver_is_told_so():
    # The CUDA runtime calls a missing driver "insufficient"; dlbridge says what is missing.
    if _driver_loads():
        assert not INFO["cuda_status"].startswith("no NVIDIA driver found")
    else:
        assert INFO["cuda_status"].startswith("no NVIDIA driver found: ")
        assert "libcuda.so.1" in INFO["cuda_status"]
        with pytest.raises(RuntimeError, match=r"^no CUDA device is available \(no NVIDIA driver found: "):
            dlbridge.empty(1, device="cuda")


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


# -- Moving and copying device data ----------------------------------------------

DEVICE_WORK = {
    "copy()": lambda: on_cuda().copy(),
    "to_device(cpu)": lambda: on_cuda().to_device("cpu"),
    "to_device(cuda)": lambda: dlbridge.zeros(2).to_device("cuda"),
    "to_device(cuda_host)": lambda: dlbridge.zeros(2).to_device("cuda_host"),
    # A stream other than the legacy one is asked whether it is capturing a
    # CUDA graph: after the device, never with a handle and no device.
    "to_device(cpu, stream=handle)": lambda: on_cuda().to_device("cpu", stream=0x7f0012345600),
    "to_device(cuda_host, stream=2)": lambda: dlbridge.zeros(2).to_device("cuda_host", stream=2),
    "asarray(dtype=)": lambda: dlbridge.asarray(on_cuda(), dtype="float64"),
    "asarray(device=cpu)": lambda: dlbridge.asarray(on_cuda(), device="cpu"),
    "asarray(device=cuda)": lambda: dlbridge.asarray(np.arange(3), device="cuda"),
    "asarray(list, device=cuda)": lambda: dlbridge.asarray([1, 2], device="cuda"),
    "from_dlpack(device=cpu)": lambda: dlbridge.from_dlpack(on_cuda(), device="cpu"),
    "from_dlpack(device=cuda)": lambda: dlbridge.from_dlpack(np.arange(3), device="cuda"),
}


@needs_no_gpu
@pytest.mark.parametrize("work", list(DEVICE_WORK))
def test_device_work_without_a_gpu_is_a_clean_error(work):
    with pytest.raises(RuntimeError, match=NO_DEVICE):
        DEVICE_WORK[work]()


def test_to_device_of_the_same_device_is_the_array_itself():
    a = dlbridge.zeros(2)
    assert a.to_device("cpu") is a
    assert a.to_device(dlbridge.Device("cpu"), stream=None) is a
    c = on_cuda()
    assert c.to_device("cuda:0") is c
    assert c.to_device((2, 0), stream=1) is c


class NamedStream:
    """A stream object of the cuda.core kind: __cuda_stream__() -> (version, handle)."""

    def __init__(self, named):
        self.named = named

    def __cuda_stream__(self):
        return self.named


@pytest.mark.parametrize("stream, error, message", [
    (0, ValueError, "stream 0 is ambiguous on CUDA"),
    (-1, ValueError, "stream must be 1, 2 or a stream handle, got -1"),
    (1.0, TypeError, "stream must be an int, an object with __cuda_stream__, or None, got float"),
    (True, TypeError, "got bool"),
    (NamedStream([0, 5]), TypeError, "__cuda_stream__() must return a (version, handle) tuple, got [0, 5]"),
    (NamedStream((0, 0)), ValueError, "stream 0 is ambiguous"),
    (1 << 64, ValueError, f"stream must fit in 64 bits, got {1 << 64}"),
    (NamedStream((0, -(1 << 63) - 1)), ValueError, f"stream must fit in 64 bits, got {-(1 << 63) - 1}"),
])
def test_to_device_stream_is_checked_before_any_work(stream, error, message):
    with pytest.raises(error, match=re.escape(message)):
        dlbridge.zeros(2).to_device("cpu", stream=stream)


def test_to_device_accepts_cuda_stream_objects():
    a = dlbridge.zeros(2)
    assert a.to_device("cpu", stream=NamedStream((0, 12345))) is a


@needs_no_gpu
@pytest.mark.parametrize("device", [(2, 0), (13, 0)], ids=["cuda", "cuda_managed"])
def test_from_dlpack_copies_device_memory_the_producer_did_not_copy(device):
    # copy=True is never passed to a producer: asked for a copy, a GPU
    # producer may make it on its stream after ordering the consumer's
    # (PyTorch does), and dlbridge would read it unwritten. dlbridge takes
    # the shared tensor and copies it on the device itself, which here fails
    # cleanly, and the producer's tensor is released.
    mt = ManagedTensor(range(3), device=device)
    producer = Producer(mt, device=device)
    with pytest.raises(RuntimeError, match=NO_DEVICE):
        dlbridge.from_dlpack(producer, copy=True)
    assert producer.calls == [{"stream": 1, "max_version": (1, 3)}]
    assert mt.deleter_calls == 1


@needs_no_gpu
def test_from_dlpack_of_managed_memory_tells_the_producer_the_legacy_stream():
    # The host may read managed memory next: dlbridge waits for the legacy
    # stream, where the producer was told to order its work. Without a usable
    # device nothing of this process can be pending there.
    mt = ManagedTensor(range(3), device=(13, 0))
    producer = Producer(mt, device=(13, 0))
    a = dlbridge.from_dlpack(producer)
    assert a.device == "cuda_managed" and a.tolist() == [0.0, 1.0, 2.0]
    assert producer.calls[-1] == {"stream": 1, "max_version": (1, 3)}
    del a
    assert mt.deleter_calls == 1


@needs_no_gpu
def test_from_dlpack_moving_asks_the_producer_for_no_copy():
    # dlbridge moves the data itself: a copy asked of the producer would be a second one.
    mt = ManagedTensor(range(3), device=(2, 0))
    producer = Producer(mt, device=(2, 0))
    with pytest.raises(RuntimeError, match=NO_DEVICE):
        dlbridge.from_dlpack(producer, device="cpu", copy=True)
    # Told the consumer's stream: 1, the legacy default stream dlbridge orders its GPU work on.
    assert producer.calls[-1] == {"stream": 1, "max_version": (1, 3)}
    assert mt.deleter_calls == 1


@pytest.mark.parametrize("what, action", [
    ("__array_interface__", lambda a: a.__array_interface__),
    ("the buffer protocol", memoryview),
    ("tolist()", lambda a: a.tolist()),
    ("float()", lambda a: float(a[0, 0])),
    ("int()", lambda a: int(a[0, 0])),
])
def test_host_access_to_device_memory_messages(what, action):
    with pytest.raises(BufferError, match=exactly(f"{what} needs host-accessible memory; this array is on cuda:0")):
        action(on_cuda())


# -- __dlpack__ of an array on a GPU ---------------------------------------------

@pytest.mark.parametrize("stream", [None, 1, -1])
def test_dlpack_streams_needing_no_order_need_no_device(stream):
    # None and 1: the consumer uses the legacy default stream, the one the
    # data is ready on; -1: the consumer asked for no ordering.
    c = on_cuda()
    capsule = c.__dlpack__(stream=stream, max_version=(1, 3))
    assert dlbridge.from_dlpack(CapsuleOwner(capsule, c)).data_ptr == c.data_ptr


class CapsuleOwner:
    """Hands out a capsule made earlier (to check what it holds)."""

    def __init__(self, capsule, source):
        self.capsule, self.source = capsule, source

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.source.__dlpack_device__()


@needs_no_gpu
@pytest.mark.parametrize("stream", [2, 12345])
def test_dlpack_stream_to_order_without_a_gpu_is_a_clean_error(stream):
    # Ordering another stream after the legacy one needs the runtime.
    with pytest.raises(RuntimeError, match=NO_DEVICE):
        on_cuda().__dlpack__(stream=stream, max_version=(1, 3))


@needs_no_gpu
@pytest.mark.parametrize("kwargs, what", [(dict(copy=True), "as a copy"),
                                          (dict(dl_device=(1, 0)), "to device (1, 0)"),
                                          (dict(dl_device=(1, 0), copy=True), "to device (1, 0)")])
def test_dlpack_copies_of_device_data_without_a_gpu_are_buffer_errors(kwargs, what):
    with pytest.raises(BufferError, match=f"^cannot export an array on cuda:0 {re.escape(what)}: "
                                          f"no CUDA device is available"):
        on_cuda().__dlpack__(max_version=(1, 3), **kwargs)


def test_dlpack_copy_false_across_devices_is_a_buffer_error():
    with pytest.raises(BufferError, match=re.escape("copy=False, but exporting an array on cuda:0 to device "
                                                    "(1, 0) needs a copy")):
        on_cuda().__dlpack__(max_version=(1, 3), dl_device=(1, 0), copy=False)


@pytest.mark.parametrize("dl_device", [(3, 0), (13, 0)])
@needs_no_gpu
def test_dlpack_to_other_cuda_memory_without_a_gpu(dl_device):
    with pytest.raises(BufferError, match="no CUDA device is available"):
        dlbridge.zeros(2).__dlpack__(max_version=(1, 3), dl_device=dl_device)


# -- The CUDA array interface produced ---------------------------------------------

def test_cuda_array_interface_is_absent_on_the_cpu():
    a = dlbridge.zeros(2)
    assert not hasattr(a, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="only defined for arrays in CUDA memory; this array is on cpu"):
        a.__cuda_array_interface__


@pytest.mark.parametrize("read_only", [False, True])
def test_cuda_array_interface_version_3(read_only):
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = dlbridge.asarray(CudaInterface(host, data=(host.ctypes.data, read_only)))
    assert c.__cuda_array_interface__ == {
        "version": 3, "shape": (2, 3), "typestr": "<f4", "data": (host.ctypes.data, read_only),
        "strides": None, "stream": 1}
    t = c.T.__cuda_array_interface__
    assert t["shape"] == (3, 2) and t["strides"] == (4, 12) and t["data"][0] == host.ctypes.data
    r = c[:, ::-1].__cuda_array_interface__
    assert r["strides"] == (12, -4) and r["data"][0] == host.ctypes.data + 8
    # What dlbridge produces, dlbridge (and any consumer) takes back without a copy.
    back = dlbridge.asarray(CudaInterface(host, **{k: v for k, v in t.items()}))
    assert back.data_ptr == host.ctypes.data and back.device == "cuda:0" and back.strides == c.T.strides


def test_cuda_array_interface_of_an_empty_array_has_data_0():
    host = np.zeros((0, 3), dtype=np.int16)
    c = dlbridge.asarray(CudaInterface(host))
    assert c.__cuda_array_interface__["data"] == (0, False)
    assert c.__cuda_array_interface__["typestr"] == "<i2"


def test_cuda_array_interface_needs_a_typestr():
    bfloat16 = ManagedTensor([0] * 4, dtype=(4, 16, 1), ctype=ctypes.c_uint16, device=(2, 0))
    c = dlbridge.from_dlpack(Producer(bfloat16, device=(2, 0)))
    with pytest.raises(BufferError, match="bfloat16 has no CUDA-array-interface typestr; use DLPack"):
        c.__cuda_array_interface__


# -- The CUDA array interface consumed -------------------------------------------------

def test_cuda_interface_memory_the_runtime_does_not_know_is_cuda_0():
    # Without a usable device nothing can be asked; the interface's word is taken.
    host = np.zeros(3, dtype=np.float32)
    assert dlbridge.asarray(CudaInterface(host)).__dlpack_device__() == (2, 0)


@needs_no_gpu
@pytest.mark.parametrize("stream", [2, 12345])
def test_cuda_interface_stream_to_wait_for_without_a_gpu_is_a_clean_error(stream):
    # The producer's stream must be waited for on the GPU, never by the host.
    with pytest.raises(RuntimeError, match=NO_DEVICE):
        dlbridge.asarray(CudaInterface(np.zeros(3, dtype=np.float32), stream=stream))


def test_cuda_interface_stream_of_an_empty_array_is_not_waited_for():
    empty = np.zeros(0, dtype=np.float32)
    assert dlbridge.asarray(CudaInterface(empty, data=(0, False), stream=12345)).shape == (0,)


@needs_no_gpu
def test_release_cuda_cache_without_a_gpu_releases_nothing():
    assert "release_cuda_cache" in dlbridge.__all__
    assert dlbridge.release_cuda_cache() == 0
    assert dlbridge.release_cuda_cache() == 0  # and stays callable


@needs_no_gpu
@pytest.mark.any_python  # the backend's: the versions stage builds without it
@pytest.mark.skipif(not INFO["cuda"], reason="dlbridge was built without the CUDA backend (no nvcc), which alone "
                                             "knows whether this process used CUDA before the fork")
@pytest.mark.parametrize("device", [(3, 0), (13, 0)], ids=["cuda_host", "cuda_managed"])
def test_a_forked_child_does_not_read_cuda_memory_it_inherited(device):
    # Host memory labelled pinned or managed stands in for the real thing:
    # the parent (which asked CUDA for its devices: gpu.INFO) reads it; a
    # child forked after that refuses to, before touching it.
    a = dlbridge.from_dlpack(Producer(ManagedTensor(range(3), device=device), device=device))
    assert a.tolist() == [0.0, 1.0, 2.0]

    def checks():
        failures = 0
        for read in (a.tolist, lambda: memoryview(a), lambda: a.__array_interface__):
            try:
                read()
                failures |= 1
            except BufferError as e:
                failures |= 0 if "was inherited across fork() from a process that used CUDA" in str(e) else 2
        return failures

    in_forked_child(checks)
    assert a.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.any_python  # the backend's: the versions stage builds without it
@pytest.mark.skipif(not INFO["cuda"], reason="dlbridge was built without the CUDA backend (no nvcc)")
def test_importing_dlbridge_asks_cuda_nothing():
    # The CUDA runtime loads the driver (libcuda.so.1, present or not) at its
    # first call, and a process whose CUDA is initialised cannot fork children
    # that use it: only build_info() and GPU work may ask. LD_DEBUG shows the load.
    import os
    import subprocess
    import sys

    code = ("import sys, dlbridge; sys.stderr.write('-- imported --\\n'); sys.stderr.flush(); "
            "dlbridge.build_info()")
    run = subprocess.run([sys.executable, "-c", code], env={**os.environ, "LD_DEBUG": "libs"}, capture_output=True,
                         text=True, check=True)
    imported, marker, asked = run.stderr.partition("-- imported --\n")
    assert marker, run.stderr[-2000:]
    assert "find library=libcuda.so.1" not in imported
    assert "find library=libcuda.so.1" in asked  # the control: the load is seen where it happens
