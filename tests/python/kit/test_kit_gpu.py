"""The conformance kit's GPU tier (dlbridge.testing._gpu).

Without a usable GPU, which is the case on CI, every clause of the tier is
not applicable with the reason, and the pytest plugin skips it saying so.
What the clauses decide is tested here anyway: the plain functions they
are built on directly, and the clauses themselves against FakeCuda, a
stand-in for the CUDA driver over host memory whose streams hold writes
back until something waits for them, with hand-made CUDA producers (one
seeded bug each: exactly its clause fails) and with dlbridge's own arrays
labelled cuda:0 over host memory. The driver bindings are checked against
the CUDA toolkit's cuda.h, and the spin kernel against ptxas, where the
toolkit is installed. The GPU run (tests/gpu/run's kit stage) checks the
real thing."""
import contextlib
import ctypes
import gc
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import dlbridge
import gpu
from dlbridge import testing
from dlbridge.testing import _abi, _gpu, _model, libraries
from dlbridge.testing._model import FAIL, NOT_APPLICABLE, PASS, Failed

PRODUCER_IDS = [
    "producer.gpu-stream.none", "producer.gpu-stream.no-sync", "producer.gpu-stream.legacy",
    "producer.gpu-stream.per-thread", "producer.gpu-stream.foreign", "producer.gpu-stream.ordered",
    "producer.gpu-device.capsule", "producer.gpu-device.method",
    "producer.gpu-to-host.copy", "producer.gpu-to-host.is-copied", "producer.gpu-to-host.no-copy",
    "producer.gpu-interface.version", "producer.gpu-interface.data", "producer.gpu-interface.c-order",
    "producer.gpu-interface.stream",
]
CONSUMER_IDS = [
    "consumer.gpu-interface.strides-absent", "consumer.gpu-interface.strides-none",
    "consumer.gpu-dlpack.to-host", "consumer.gpu-dlpack.stream", "consumer.gpu-dlpack.device",
]
GPU_IDS = PRODUCER_IDS + CONSUMER_IDS
SOURCES = {"DLPack Python specification", "dlpack.h", "array API standard", "CUDA Array Interface (v3)"}
NO_GPU_REASON = _gpu.unavailable()
needs_no_gpu = pytest.mark.skipif(NO_GPU_REASON is None, reason="a GPU is usable here: the GPU tier runs")


def verdicts(results):
    return {r.clause: (r.verdict, r.observed) for r in results}


# -- registration, and the tier without a GPU --------------------------------------------------


def test_the_module_registers_the_gpu_clauses_in_order():
    mine = [c for c in _model.CLAUSES if c.check.__module__ == _gpu.__name__]
    assert [c.id for c in mine] == GPU_IDS
    assert [c.id for c in testing.clauses("producer") if c.tier == "gpu"] == PRODUCER_IDS
    assert [c.id for c in testing.clauses("consumer") if c.tier == "gpu"] == CONSUMER_IDS
    for c in mine:
        assert c.tier == "gpu" and c.source in SOURCES and c.cites and c.title, c


@needs_no_gpu
@pytest.mark.parametrize("factory", ["dlbridge_array", "numpy_array", "torch_tensor", "jax_array", "cupy_array",
                                     "array_api_strict_array", "memoryview_of", "array_array", "bytes_of"])
def test_without_a_gpu_every_producer_clause_is_not_applicable_with_the_reason(factory):
    results = testing.check_producer(getattr(libraries, factory), only=PRODUCER_IDS)
    assert verdicts(results) == {i: (NOT_APPLICABLE, f"GPU tier: {NO_GPU_REASON}") for i in PRODUCER_IDS}


@needs_no_gpu
@pytest.mark.parametrize("function", ["dlbridge_from_dlpack", "dlbridge_asarray", "numpy_from_dlpack",
                                      "torch_from_dlpack", "torch_as_tensor", "jax_from_dlpack",
                                      "cupy_from_dlpack", "cupy_asarray", "array_api_strict_from_dlpack"])
def test_without_a_gpu_every_consumer_clause_is_not_applicable_with_the_reason(function):
    results = testing.check_consumer(getattr(libraries, function), only=CONSUMER_IDS)
    assert verdicts(results) == {i: (NOT_APPLICABLE, f"GPU tier: {NO_GPU_REASON}") for i in CONSUMER_IDS}


@needs_no_gpu
def test_without_a_gpu_the_child_processes_say_so_too():
    results = [r for r in testing.check("producer", "dlbridge.testing.libraries:torch_tensor")
               if r.clause in PRODUCER_IDS]
    assert verdicts(results) == {i: (NOT_APPLICABLE, f"GPU tier: {NO_GPU_REASON}") for i in PRODUCER_IDS}


@needs_no_gpu
def test_the_pytest_plugin_skips_each_gpu_clause_with_the_reason(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "dlbridge.testing", "-p", "no:cacheprovider", "-v",
         "--dlpack-producer", "dlbridge.testing.libraries:dlbridge_array",
         "--dlpack-consumer", "dlbridge.testing.libraries:dlbridge_from_dlpack", "-k", "gpu"],
        cwd=tmp_path, capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), COLUMNS="400"),
        timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    skipped = re.findall(r"dlpack::(\S+) SKIPPED \(not applicable: (.+?)\)\s+\[", run.stdout)
    assert sorted(skipped) == sorted((i, f"GPU tier: {NO_GPU_REASON}") for i in GPU_IDS), run.stdout
    assert f"{len(GPU_IDS)} skipped" in run.stdout


def test_the_module_is_clean_under_pyflakes():
    pyflakes = pytest.importorskip("pyflakes.api")
    from pyflakes.reporter import Reporter
    import io
    out = io.StringIO()
    for module in (_gpu, libraries):
        assert pyflakes.checkPath(module.__file__, Reporter(out, out)) == 0, out.getvalue()


# -- the plain functions ---------------------------------------------------------------------------


def test_memory_kinds_and_the_labels_they_need():
    assert _gpu.memory_kind(2, 0) == "device" and _gpu.memory_kind(1, 0) == "host"
    assert _gpu.memory_kind(2, 1) == "managed" and _gpu.memory_kind(4, 0) == "managed"
    assert _gpu.memory_kind(0, 0) == "pageable"
    assert _gpu.expected_label("device", 1) == (2, 1)
    assert _gpu.expected_label("host", 1) == (3, 0) and _gpu.expected_label("managed", 1) == (13, 0)
    assert _gpu.expected_label("pageable", -2) == (1, 0)
    assert _gpu.label_name((2, 1)) == "(kDLCUDA, 1)" and _gpu.label_name((7, 0)) == "(7, 0)"


@pytest.mark.parametrize("typestr, expected", [("<f4", "float32"), ("|u1", "uint8"), ("|b1", "bool"),
                                               ("<c8", "complex64"), ("<i8", "int64"), ("=f2", "float16")])
def test_typestrs_the_kit_reads(typestr, expected):
    assert _gpu.typestr_dtype(typestr) == expected


@pytest.mark.parametrize("typestr", [">f4", "<f3", "f4", None, "|f4", "<V8", "<f", "<b2", "<c4"])
def test_typestrs_the_kit_refuses(typestr):
    with pytest.raises(Failed, match="typestr"):
        _gpu.typestr_dtype(typestr)


def test_byte_offsets_spans_and_decoding():
    assert _gpu.byte_offsets((2, 3), (12, 4)) == [0, 4, 8, 12, 16, 20]
    assert _gpu.byte_offsets((2, 3), (4, 8)) == [0, 8, 16, 4, 12, 20]  # F order
    assert _gpu.byte_offsets((3,), (-4,)) == [0, -4, -8]
    assert _gpu.byte_offsets((2, 0), (0, 4)) == [] and _gpu.byte_offsets((), ()) == [0]
    assert _gpu.span([0, -4, -8], 4) == (-8, 12) and _gpu.span([], 4) == (0, 0)
    raw = np.arange(6, dtype=np.float32).tobytes()
    assert _gpu.decode(raw, [20, 0], "float32") == [5.0, 0.0]
    assert _gpu.decode(np.array([1 + 2j], np.complex64).tobytes(), [0], "complex64") == [1 + 2j]


def test_interface_layouts():
    base = {"shape": (2, 3), "typestr": "<f4", "data": (4096, True), "version": 3}
    c_order = _gpu.Interface((2, 3), "float32", (12, 4), 4096)
    assert _gpu.interface_layout(base) == c_order
    assert _gpu.interface_layout(dict(base, strides=None)) == c_order
    assert _gpu.interface_layout(dict(base, strides=(4, 8))).strides == (4, 8)
    for bad, match in [(dict(base, strides=(4,)), "strides"), (dict(base, data=4096), "data"),
                       (dict(base, data=(4096, 0)), "data"), (dict(base, shape=[2, 3]), "shape"),
                       (dict(base, typestr=">f4"), "typestr"), ([], "not a dict")]:
        with pytest.raises(Failed, match=match):
            _gpu.interface_layout(bad)


@pytest.mark.parametrize("entry", [{}, {"stream": None}, {"stream": 1}, {"stream": 2}, {"stream": 0x7F001234}])
def test_interface_streams_that_pass(entry):
    assert _gpu.interface_stream_verdict(entry)


@pytest.mark.parametrize("entry, match", [({"stream": 0}, "disallows"), ({"stream": -1}, "not a stream"),
                                          ({"stream": "1"}, "not None or an int"),
                                          ({"stream": True}, "not None or an int")])
def test_interface_streams_that_fail(entry, match):
    with pytest.raises(Failed, match=match):
        _gpu.interface_stream_verdict(entry)


def test_stream_export_verdicts():
    assert _gpu.stream_export_verdict("None", None, optional=False) == "__dlpack__(stream=None) returned a capsule"
    with pytest.raises(Failed, match=r"stream=None .* must be accepted"):
        _gpu.stream_export_verdict("None", BufferError("no"), optional=False)
    assert "refused with BufferError: no (support" in _gpu.stream_export_verdict("2", BufferError("no"),
                                                                                  optional=True)
    for error in (ValueError("no"), TypeError("no"), AssertionError()):
        with pytest.raises(Failed, match="is refused with BufferError"):
            _gpu.stream_export_verdict("2", error, optional=True)


def test_consumer_stream_verdicts():
    assert "no stream" in _gpu.consumer_stream_verdict([{"max_version": (1, 3)}])
    assert _gpu.consumer_stream_verdict([{"stream": 1}]).endswith("stream=1 (the legacy default stream)")
    assert "then stream=-1" in _gpu.consumer_stream_verdict([{"stream": 0x1234}, {"stream": -1}])
    for calls, match in [([], "never called"), ([{"stream": 0}], "stream=0"), ([{"stream": -2}], ">= -1"),
                         ([{"stream": 1.0}], "not an int"), ([{"stream": True}], "not an int"),
                         ([{"stream": 1}, {"stream": 0}], "stream=0")]:
        with pytest.raises(Failed, match=match):
            _gpu.consumer_stream_verdict(calls)


def test_work_stream_handles():
    assert [_gpu.work_stream_handle(v) for v in (None, 0, 1, 2, 0x7F00)] == [1, 1, 1, 2, 0x7F00]


# -- the driver bindings and the kernel, against the CUDA toolkit -----------------------------------


def _cuda_header():
    homes = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    if shutil.which("nvcc"):
        homes.insert(0, str(pathlib.Path(shutil.which("nvcc")).resolve().parents[1]))
    for home in filter(None, homes):
        path = pathlib.Path(home) / "include" / "cuda.h"
        if path.is_file():
            return path.read_text()
    pytest.skip("no CUDA toolkit (cuda.h) here")


def _parameter_count(header, exported):
    # cuda.h declares the plain name; a #define maps it to the exported one.
    plain = re.search(rf"#define\s+(\w+)\s+(?:__CUDA_API_PT(?:DS|SZ)\()?{exported}\)?\s*$", header, re.M)
    name = plain.group(1) if plain else exported
    found = re.search(rf"CUresult CUDAAPI {name}\(([^)]*)\)", header)
    assert found, f"cuda.h declares no {name} (exported as {exported})"
    parameters = found.group(1).strip()
    return 0 if parameters in ("", "void") else parameters.count(",") + 1


def test_every_driver_function_the_kit_binds_is_declared_so_in_cuda_h():
    header = _cuda_header()
    for exported, argtypes in _gpu.SIGNATURES.items():
        assert _parameter_count(header, exported) == len(argtypes), exported


def test_the_driver_constants_are_cuda_hs():
    header = _cuda_header()
    for name in ("CU_POINTER_ATTRIBUTE_MEMORY_TYPE", "CU_POINTER_ATTRIBUTE_IS_MANAGED",
                 "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL", "CU_MEMORYTYPE_HOST", "CU_MEMORYTYPE_DEVICE",
                 "CU_MEMORYTYPE_UNIFIED", "CU_STREAM_NON_BLOCKING", "CUDA_ERROR_NOT_READY"):
        value = re.search(rf"\b{name}\s*=\s*(0x[0-9a-fA-F]+|\d+)", header).group(1)
        assert int(value, 0) == getattr(_gpu, name), name
    for name in ("CU_STREAM_LEGACY", "CU_STREAM_PER_THREAD"):
        value = re.search(rf"#define {name}\s+\(\(CUstream\)(0x[0-9a-fA-F]+)\)", header).group(1)
        assert int(value, 0) == getattr(_gpu, name), name


def test_the_spin_kernel_assembles(tmp_path):
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas (the CUDA toolkit) is not installed here")
    (tmp_path / "spin.ptx").write_bytes(_gpu.SPIN_PTX)
    for arch in ("sm_75", "sm_90"):
        run = subprocess.run([ptxas, f"-arch={arch}", "spin.ptx", "-o", f"{arch}.cubin"], cwd=tmp_path,
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
    assert f".entry {_gpu.SPIN_KERNEL}(" in _gpu.SPIN_PTX.decode()


def test_without_a_driver_the_tier_says_why():
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        with pytest.raises(_model.NotApplicable, match="the CUDA driver library does not load"):
            _gpu.Cuda()
    else:
        pytest.skip("a CUDA driver is installed here")


# -- FakeCuda: the clauses' decisions without a GPU -----------------------------------------------------


class FakeCuda:
    """Cuda over host memory. "Device" memory is what alloc returns or
    register names (kept alive, so that no host allocation reuses it). A
    write queued on a stream lands only when something waits for it: a read
    on that stream, or on a stream made to wait for it (order), a read on no
    stream (the legacy one), or synchronize."""

    def __init__(self):
        self.device = []  # (first, end) of "device" memory
        self.buffers = {}  # address -> what holds the memory
        self.allocated = set()  # what alloc returned and free did not take back
        self.queued = {}  # stream -> writes not landed: [address, size, byte]
        self.waits = {}  # stream -> writes it waits for
        self.streams = 0x7F000000

    def register(self, array):
        self.buffers[array.ctypes.data] = array
        self.device.append((array.ctypes.data, array.ctypes.data + max(array.nbytes, 1)))

    def memory(self, address):
        return ("device", 0) if any(a <= address < b for a, b in self.device) else ("pageable", -2)

    def alloc(self, data):
        array = np.frombuffer(bytearray(data or b"\0"), np.uint8)
        self.register(array)
        self.allocated.add(array.ctypes.data)
        return array.ctypes.data

    def free(self, address):
        self.allocated.remove(address)
        del self.buffers[address]
        self.device = [(a, b) for a, b in self.device if a != address]

    def order(self, consumer, producer):
        """What a producer does for __dlpack__(stream=consumer): the writes
        queued on its stream so far land before the consumer's next work."""
        self.waits.setdefault(consumer, []).extend(self.queued.get(producer, []))

    def _land(self, writes):
        for write in writes:
            if write[2] is not None:
                ctypes.memset(write[0], write[2], write[1])
                write[2] = None

    def synchronize(self, stream=None):
        for s in ([stream] if stream is not None else list(self.queued)):
            self._land(self.queued.pop(s, []))

    def read(self, address, size, stream=None):
        self._land(self.waits.pop(stream, []))
        self.synchronize(1 if stream is None else stream)
        return ctypes.string_at(address, size)

    def slow_write(self, address, size, byte, stream, seconds):
        self.queued.setdefault(stream, []).append([address, size, byte])

    def busy(self, stream):
        return any(w[2] is not None for w in self.queued.get(stream, []))

    @contextlib.contextmanager
    def stream(self):
        self.streams += 0x100
        yield self.streams


@pytest.fixture
def fake(monkeypatch):
    """The GPU tier on FakeCuda: clauses run, their reads and writes on host memory."""
    cuda = FakeCuda()
    monkeypatch.setattr(_gpu, "driver", lambda: cuda)
    monkeypatch.setitem(_model.UNAVAILABLE, "gpu", lambda: None)
    return cuda


class FakeGpuArray:
    """A conforming CUDA array, as far as the kit can tell on FakeCuda: its
    data is host memory the fake calls device memory, its work is on the
    legacy default stream (its interface's "stream": 1), __dlpack__(stream=s)
    orders s after that stream, dl_device=(kDLCPU, 0) copies to the host."""

    label = method_label = (2, 0)

    def __init__(self, data, cuda):
        self.data, self.cuda, self.kept = data, cuda, []
        cuda.register(data)

    def __dlpack_device__(self):
        return self.method_label

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.check_stream(stream)
        if dl_device is not None and tuple(dl_device) != (2, 0):
            if copy is False:
                raise BufferError("moving the data to the host needs a copy")
            return self.capsule(self.host_copy(), (1, 0), _abi.FLAG_IS_COPIED, max_version)
        if stream not in (None, -1, 1):
            self.order(stream)
        return self.capsule(self.data, self.label, 0, max_version)

    def check_stream(self, stream):
        pass

    def order(self, stream):
        self.cuda.order(stream, 1)

    def host_copy(self):
        return self.data.copy()

    def capsule(self, data, device, flags, max_version):
        self.kept.append(data)
        strides = tuple(s // data.itemsize for s in data.strides)
        managed = _abi.ManagedTensor(shape=data.shape, strides=strides, dtype=_abi.DTYPES[data.dtype.name][0],
                                     device=device, data=data.ctypes.data, flags=flags,
                                     versioned=max_version is not None)
        return managed.capsule()

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.data.shape, "typestr": self.data.dtype.str, "data": (self.data.ctypes.data, False),
                "version": 3, "strides": None, "stream": 1}


def fake_factory(kind):
    def factory(shape, dtype, *, read_only=False, device=None):
        if device != "cuda":
            raise NotImplementedError("GPU only")
        return kind(np.arange(math.prod(shape)).astype(dtype).reshape(shape), _gpu.driver())
    factory.__qualname__ = kind.__name__
    return factory


# One bug each, and the one clause that must catch it.

class CapsuleSaysCpu(FakeGpuArray):  # seed 003: GPU data exported labelled kDLCPU
    label = (1, 0)


class MethodSaysCpu(FakeGpuArray):  # seed 003 through __dlpack_device__
    method_label = (1, 0)


class RefusesStreamNone(FakeGpuArray):
    def __dlpack__(self, **keywords):
        if "stream" in keywords and keywords["stream"] is None:
            raise BufferError("stream=None is not supported")
        return super().__dlpack__(**keywords)


class RefusesNoSyncWithValueError(FakeGpuArray):
    def check_stream(self, stream):
        if stream == -1:
            raise ValueError("stream -1 is not supported")


class RefusesPerThreadWithValueError(FakeGpuArray):
    def check_stream(self, stream):
        if stream == 2:
            raise ValueError("per-thread default stream is not supported")


class RefusesForeignStreamWithTypeError(FakeGpuArray):
    def check_stream(self, stream):
        if stream is not None and stream > 2:
            raise TypeError("stream must be 1 or 2")


class DoesNotOrder(FakeGpuArray):  # takes the consumer's stream and ignores it
    def order(self, stream):
        pass


class NoDlDeviceKeyword(FakeGpuArray):  # a producer older than DLPack 1.0's keywords
    def __dlpack__(self, *, stream=None, max_version=None):
        return super().__dlpack__(stream=stream, max_version=max_version)


class HostCopyOfZeros(FakeGpuArray):
    def host_copy(self):
        return np.zeros_like(self.data)


class HostCopyNotFlagged(FakeGpuArray):
    def capsule(self, data, device, flags, max_version):
        return super().capsule(data, device, 0, max_version)


class CopyFalseIgnored(FakeGpuArray):  # copy=False: device memory handed out labelled kDLCPU
    def __dlpack__(self, *, copy=None, dl_device=None, **keywords):
        if copy is False:
            return self.capsule(self.data, (1, 0), 0, keywords.get("max_version"))
        return super().__dlpack__(copy=copy, dl_device=dl_device, **keywords)


class InterfaceVersion2(FakeGpuArray):
    @property
    def __cuda_array_interface__(self):
        return dict(super().__cuda_array_interface__, version=2)


class InterfacePointsAtACopy(FakeGpuArray):
    @property
    def __cuda_array_interface__(self):
        if not hasattr(self, "other"):
            self.other = self.data.copy()
            self.cuda.register(self.other)
        return dict(super().__cuda_array_interface__, data=(self.other.ctypes.data, False))


class FOrderInterfaceWithoutStrides(FakeGpuArray):  # seed 004: Warp's crash, the producer's side
    def __init__(self, data, cuda):
        super().__init__(np.asfortranarray(data), cuda)


class InterfaceStreamZero(FakeGpuArray):
    @property
    def __cuda_array_interface__(self):
        return dict(super().__cuda_array_interface__, stream=0)


SEEDED_PRODUCERS = [
    (CapsuleSaysCpu, "producer.gpu-device.capsule", "the capsule's tensor says (kDLCPU, 0); its data is device "
                                                    "memory of device 0: (kDLCUDA, 0)"),
    (MethodSaysCpu, "producer.gpu-device.method", "__dlpack_device__() returned (1, 0); the data is device memory: "
                                                  "(kDLCUDA, 0)"),
    (RefusesStreamNone, "producer.gpu-stream.none", "__dlpack__(stream=None) raised BufferError: stream=None is not "
                                                    "supported; stream=None (the legacy default stream) must be "
                                                    "accepted"),
    (RefusesNoSyncWithValueError, "producer.gpu-stream.no-sync",
     "__dlpack__(stream=-1) raised ValueError: stream -1 is not supported; a stream the producer does not support "
     "is refused with BufferError"),
    (RefusesPerThreadWithValueError, "producer.gpu-stream.per-thread",
     "__dlpack__(stream=2) raised ValueError: per-thread default stream is not supported; a stream the producer "
     "does not support is refused with BufferError"),
    (RefusesForeignStreamWithTypeError, "producer.gpu-stream.foreign", "raised TypeError: stream must be 1 or 2"),
    (DoesNotOrder, "producer.gpu-stream.ordered", "saw 24 of 24 bytes from before the write queued on the "
                                                  "producer's stream (0x1, its __cuda_array_interface__'s \"stream\")"),
    (NoDlDeviceKeyword, "producer.gpu-to-host.copy", "raised TypeError: "),
    (HostCopyOfZeros, "producer.gpu-to-host.copy", "float32[2, 3] holds [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]"),
    (HostCopyNotFlagged, "producer.gpu-to-host.is-copied", "with flags 0x0: IS_COPIED not set"),
    (CopyFalseIgnored, "producer.gpu-to-host.no-copy", "of device memory returned a tensor on (kDLCPU, 0) with "
                                                       "flags 0x0"),
    (InterfaceVersion2, "producer.gpu-interface.version", "\"version\" is 2"),
    (InterfacePointsAtACopy, "producer.gpu-interface.data", "the DLPack export's first element at"),
    (FOrderInterfaceWithoutStrides, "producer.gpu-interface.c-order",
     "read with strides None ((12, 4) bytes), float32[2, 3] holds [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]"),
    (InterfaceStreamZero, "producer.gpu-interface.stream", "\"stream\" is 0, which the interface disallows"),
]


def test_a_conforming_cuda_producer_passes_every_clause(fake):
    results = verdicts(testing.check_producer(fake_factory(FakeGpuArray), only=PRODUCER_IDS))
    assert {i: v for i, (v, _) in results.items()} == {i: PASS for i in PRODUCER_IDS}, results
    assert results["producer.gpu-stream.ordered"][1] == (
        "a read on the kit's stream saw all 24 bytes of the write queued on the producer's stream (0x1, its "
        "__cuda_array_interface__'s \"stream\")")
    assert results["producer.gpu-device.capsule"][1] == "(kDLCUDA, 0), device memory"
    assert results["producer.gpu-stream.foreign"][1].startswith("__dlpack__(stream=0x7f")


@pytest.mark.parametrize("kind, caught_by, observed", SEEDED_PRODUCERS, ids=[k.__name__ for k, _, _ in SEEDED_PRODUCERS])
def test_each_seeded_producer_fails_exactly_its_clause(fake, kind, caught_by, observed):
    results = verdicts(testing.check_producer(fake_factory(kind), only=PRODUCER_IDS))
    failed = {i: o for i, (v, o) in results.items() if v == FAIL}
    assert list(failed) == [caught_by], results
    assert observed in failed[caught_by]


def test_the_order_is_not_applicable_where_the_producer_names_no_stream_of_its_work(fake):
    class NoStreamNamed(FakeGpuArray):
        @property
        def __cuda_array_interface__(self):
            return dict(super().__cuda_array_interface__, stream=None)
    verdict, observed = verdicts(testing.check_producer(fake_factory(NoStreamNamed),
                                                        only=["producer.gpu-stream.ordered"]))[
        "producer.gpu-stream.ordered"]
    assert verdict == NOT_APPLICABLE and observed.startswith("the producer names no stream its work is queued on")


def test_the_order_is_not_applicable_when_the_write_was_done_before_the_export(fake):
    fake.busy = lambda stream: False  # a spin too short to still run at the export
    verdict, observed = verdicts(testing.check_producer(fake_factory(FakeGpuArray),
                                                        only=["producer.gpu-stream.ordered"]))[
        "producer.gpu-stream.ordered"]
    assert verdict == NOT_APPLICABLE and "had finished before the export" in observed


def test_the_order_takes_the_work_stream_the_exchange_table_names():
    # dlbridge's own table names the legacy default stream for CUDA memory.
    assert _gpu._exchange_work_stream(dlbridge.zeros(1), 0) == 1
    assert _gpu.work_stream(dlbridge.zeros(1), 0) == (1, "its C exchange table's current_work_stream")
    assert _gpu._exchange_work_stream(np.zeros(1), 0) is None


# -- dlbridge's own arrays, labelled cuda:0 over host memory ----------------------------------------------

def dlbridge_on_fake_cuda(shape, dtype, *, read_only=False, device=None):
    """dlbridge Arrays on cuda:0 without a GPU: a CUDA array interface over
    host memory, which dlbridge never reads and FakeCuda calls device memory."""
    if device != "cuda":
        raise NotImplementedError("GPU only")
    host = np.arange(math.prod(shape)).astype(dtype).reshape(shape)
    _gpu.driver().register(host)
    return dlbridge.asarray(_gpu.CudaInterfaceOnly(
        {"shape": host.shape, "typestr": host.dtype.str, "data": (host.ctypes.data, False), "version": 3}, host))


# What dlbridge does on cuda:0 that needs no GPU work: every other clause asks
# the CUDA runtime for a stream, an event or a copy (tests/gpu/run's kit stage).
NEEDS_NO_GPU_WORK = ["producer.gpu-stream.none", "producer.gpu-stream.no-sync", "producer.gpu-stream.legacy",
                     "producer.gpu-device.capsule", "producer.gpu-device.method", "producer.gpu-interface.version",
                     "producer.gpu-interface.data", "producer.gpu-interface.c-order", "producer.gpu-interface.stream"]


def test_dlbridge_passes_the_producer_clauses_that_need_no_gpu_work(fake):
    results = verdicts(testing.check_producer(dlbridge_on_fake_cuda, only=NEEDS_NO_GPU_WORK))
    assert {i: v for i, (v, _) in results.items()} == {i: PASS for i in NEEDS_NO_GPU_WORK}, results
    assert results["producer.gpu-interface.c-order"][1] == "the values, read with strides None"
    assert results["producer.gpu-interface.stream"][1] == "\"stream\": 1 (the legacy default stream)"


@pytest.mark.parametrize("function", [libraries.dlbridge_from_dlpack, libraries.dlbridge_asarray])
def test_dlbridge_passes_every_consumer_clause(fake, function):
    # dlbridge copies to the host with its own CUDA backend, which the fake
    # driver is not: consumer.gpu-dlpack.to-host is checked on a GPU.
    ids = [i for i in CONSUMER_IDS if i != "consumer.gpu-dlpack.to-host"]
    results = verdicts(testing.check_consumer(function, only=ids))
    expected = {i: PASS for i in ids}
    if function is libraries.dlbridge_from_dlpack:  # takes DLPack producers only
        expected.update({i: NOT_APPLICABLE for i in ids if "interface" in i})
    assert {i: v for i, (v, _) in results.items()} == expected, results
    assert results["consumer.gpu-dlpack.stream"][1] == (
        "__dlpack__ was called with stream=1 (the legacy default stream)")
    assert results["consumer.gpu-dlpack.device"][1].endswith(", sharing the producer's memory")
    gc.collect()
    assert not fake.allocated  # the kit freed its device memory: dlbridge called each deleter


# -- seeded consumers -----------------------------------------------------------------------------------------


class StreamZero:
    """Hands its producer's __dlpack__ stream=0, whatever it is asked."""

    def __init__(self, producer):
        self.producer = producer

    def __dlpack__(self, **keywords):
        return self.producer.__dlpack__(**dict(keywords, stream=0))

    def __dlpack_device__(self):
        return self.producer.__dlpack_device__()


def passes_stream_zero(producer):
    return dlbridge.from_dlpack(StreamZero(producer))


def copies_to_the_host(producer):
    # Reads the "device" memory on the host (FakeCuda's is host memory): a
    # NumPy array, on the CPU, where the producer's data was on the GPU.
    tensor = _abi.Consumed(producer.__dlpack__(stream=1, max_version=(1, 3)))
    try:
        return np.array(tensor.read("float32"), dtype=np.float32).reshape(tensor.shape)
    finally:
        tensor.release()


class InterfaceRewritten:
    """Hands dlbridge the interface of `source` with its strides rewritten:
    what a consumer that read them so would import."""

    def __init__(self, source, strides):
        interface = source.__cuda_array_interface__
        self.__cuda_array_interface__ = dict(interface, strides=strides(interface))
        self.source = source


F_ORDER = (4, 8)


def absent_strides_as_f_order(obj):
    return dlbridge.asarray(InterfaceRewritten(obj, lambda i: F_ORDER if "strides" not in i else i["strides"]))


def none_strides_as_f_order(obj):
    return dlbridge.asarray(InterfaceRewritten(obj, lambda i: F_ORDER if i.get("strides", ()) is None
                                               else i.get("strides")))


def ignores_the_device(producer, *, device=None):
    return dlbridge.from_dlpack(producer)


def copies_though_copy_is_false(producer, *, device=None, copy=None):
    return np.from_dlpack(producer, device=device)


SEEDED_CONSUMERS = [
    (ignores_the_device, "consumer.gpu-dlpack.to-host",
     "device=\"cpu\": the result is on (kDLCUDA, 0), not in host memory"),
    (copies_though_copy_is_false, "consumer.gpu-dlpack.to-host",
     "with copy=False: imported, though CUDA memory cannot reach the host without a copy"),
    (passes_stream_zero, "consumer.gpu-dlpack.stream", "__dlpack__ was called with stream=0, which is disallowed"),
    (copies_to_the_host, "consumer.gpu-dlpack.device", "the result is on (kDLCPU, 0), the producer's data on "
                                                       "(kDLCUDA, 0)"),
    (absent_strides_as_f_order, "consumer.gpu-interface.strides-absent",
     "with strides absent, the result reads back as shape (2, 3) holding [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]"),
    (none_strides_as_f_order, "consumer.gpu-interface.strides-none",
     "with strides None, the result reads back as shape (2, 3) holding [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]"),
]


@pytest.mark.parametrize("function, caught_by, observed", SEEDED_CONSUMERS,
                         ids=[f.__name__ for f, _, _ in SEEDED_CONSUMERS])
def test_each_seeded_consumer_fails_exactly_its_clause(fake, function, caught_by, observed):
    results = verdicts(testing.check_consumer(function, only=CONSUMER_IDS))
    failed = {i: o for i, (v, o) in results.items() if v == FAIL}
    assert list(failed) == [caught_by], results
    assert observed in failed[caught_by]


def test_a_consumer_that_refuses_cuda_data_is_not_applicable(fake):
    """NumPy takes no CUDA data; asked for it on the host, it has the producer copy it there."""
    results = verdicts(testing.check_consumer(libraries.numpy_from_dlpack, only=CONSUMER_IDS))
    to_host = "consumer.gpu-dlpack.to-host"
    assert {i: v for i, (v, _) in results.items()} == {i: PASS if i == to_host else NOT_APPLICABLE
                                                          for i in CONSUMER_IDS}, results
    assert results[to_host][1] == ("device=\"cpu\": the result, on (kDLCPU, 0), reads back as 0, 1, ..., 5 in "
                                   "shape (2, 3); with copy=False: refused (BufferError: copy=False: device memory "
                                   "reaches the host only by a copy)")
    assert results["consumer.gpu-dlpack.device"][1].startswith("the consumer does not import CUDA data: ")
    assert results["consumer.gpu-interface.strides-none"][1].startswith(
        "the consumer does not import a __cuda_array_interface__ (with strides (12, 4) it raised ")


# -- on a GPU -----------------------------------------------------------------------------------------------

@gpu.needs_gpu
@pytest.mark.parametrize("side, name", [("producer", "dlbridge_array"), ("consumer", "dlbridge_from_dlpack"),
                                        ("consumer", "dlbridge_asarray")])
def test_dlbridge_passes_the_gpu_tier_on_a_gpu(side, name):
    # In child processes, as python -m dlbridge check runs it (tests/gpu/run's kit stage too).
    results = verdicts(r for r in testing.check(side, f"dlbridge.testing.libraries:{name}") if r.clause in GPU_IDS)
    expected = {i: PASS for i in (PRODUCER_IDS if side == "producer" else CONSUMER_IDS)}
    if name == "dlbridge_from_dlpack":  # takes DLPack producers only
        expected.update({i: NOT_APPLICABLE for i in CONSUMER_IDS if "interface" in i})
    assert {i: v for i, (v, _) in results.items()} == expected, results
