"""The Python CUDA suite: runs only where a GPU is usable (an H100 with PyTorch,
CuPy and JAX built for CUDA), and skips, saying why, elsewhere. Zero copy is
proven by pointer equality; stream ordering by a slow kernel on the writer's
stream and a read on another one, once with the ordering (the read sees the
written values) and once with ordering declined (stream=-1, or no "stream" in
the interface), which shows the read can race ahead."""
import ctypes

import numpy as np
import pytest

import dlbridge
from dlbridge.testing._abi import FLAG_IS_COPIED, Consumed
from gpu import cuda_peer, in_forked_child, needs_gpu, race_control

torch = cuda_peer("torch")
pytestmark = needs_gpu

# About 0.2 s of GPU time: long enough that an unordered read always runs first.
SLOW_CYCLES = 400_000_000
N = 1 << 20


def values(a):
    return a.to_device("cpu").tolist()


# -- Creation, copies and moves ----------------------------------------------------

@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda_host", "cuda_managed"])
def test_creation_on_the_gpu(device):
    a = dlbridge.full((2, 3), 1.5, dtype="float32", device=device)
    assert a.device == {"cuda": "cuda:0"}.get(device, device)
    assert values(a) == [[1.5] * 3] * 2
    assert values(dlbridge.zeros(4, dtype="bfloat16", device=device)) == [0.0] * 4


def test_to_device_round_trip_and_layouts():
    host = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = dlbridge.asarray(host)
    d = a.to_device("cuda")
    assert d.device == "cuda:0" and d.data_ptr != a.data_ptr
    assert values(d) == host.tolist()
    assert values(d.transpose(2, 0, 1)) == host.transpose(2, 0, 1).tolist()
    assert values(d[:, ::-1, ::2].copy()) == host[:, ::-1, ::2].tolist()
    assert values(dlbridge.asarray(d, dtype="float16")) == host.astype(np.float16).tolist()
    pinned = d.to_device("cuda_host")
    assert pinned.device == "cuda_host" and np.from_dlpack(pinned).tolist() == host.tolist()


def test_to_device_on_a_torch_stream():
    s = torch.cuda.Stream()
    a = dlbridge.full(N, 2.0, dtype="float32", device="cuda")
    b = a.to_device("cpu", stream=s.cuda_stream)
    assert np.from_dlpack(b).min() == 2.0


def test_from_dlpack_device_moves():
    host = np.arange(6.0)
    d = dlbridge.from_dlpack(host, device="cuda")
    assert d.device == "cuda:0" and values(d) == host.tolist()
    back = dlbridge.from_dlpack(d, device="cpu")
    assert back.device == "cpu" and back.tolist() == host.tolist()
    with pytest.raises(ValueError, match="copy=False"):
        dlbridge.from_dlpack(host, device="cuda", copy=False)


def test_dlpack_host_copy_is_flagged_copied():
    d = dlbridge.full(3, 7, dtype="int32", device="cuda")
    assert np.from_dlpack(d, device="cpu").tolist() == [7, 7, 7]
    c = Consumed(d.__dlpack__(max_version=(1, 3), dl_device=(1, 0)))
    assert c.flags & FLAG_IS_COPIED and c.device == (1, 0) and c.tensor.data != d.data_ptr
    c.release()
    with pytest.raises(BufferError, match="copy=False"):
        d.__dlpack__(max_version=(1, 3), dl_device=(1, 0), copy=False)


# -- Zero-copy interop ---------------------------------------------------------------

def test_torch_both_directions_share_memory():
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)[:, ::2]
    a = dlbridge.from_dlpack(t)
    assert a.data_ptr == t.data_ptr() and a.device == "cuda:0" and a.strides == (4, 2)
    back = torch.from_dlpack(a)
    assert back.data_ptr() == t.data_ptr() and back.device.type == "cuda"
    back[0, 0] = 100
    assert t[0, 0].item() == 100


def test_cupy_both_directions_and_cuda_array_interface():
    cupy = cuda_peer("cupy")
    c = cupy.arange(10, dtype=cupy.float64)[::2]
    a = dlbridge.from_dlpack(c)
    assert a.data_ptr == c.data.ptr and a.strides == (2,)
    assert cupy.from_dlpack(a).data.ptr == c.data.ptr
    via_interface = dlbridge.asarray(Interface(c.__cuda_array_interface__, c))
    assert via_interface.data_ptr == c.data.ptr and via_interface.device == "cuda:0"
    # Ours, read by CuPy through __cuda_array_interface__.
    d = dlbridge.full((2, 3), 4.0, device="cuda").T
    view = cupy.asarray(d)
    assert view.data.ptr == d.data_ptr and view.strides == (8, 24) and float(view.sum()) == 24.0


class Interface:
    """A hand-made __cuda_array_interface__ over memory `owner` keeps alive."""

    def __init__(self, interface, owner):
        self.__cuda_array_interface__, self.owner = interface, owner


def test_jax_both_directions():
    jax = cuda_peer("jax")
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    x = jax.device_put(jax.numpy.arange(8, dtype=jax.numpy.float32), gpus[0])
    a = dlbridge.from_dlpack(x)
    assert a.data_ptr == x.unsafe_buffer_pointer() and a.device == "cuda:0"
    y = jax.numpy.from_dlpack(dlbridge.full(4, 3.0, dtype="float32", device="cuda"))
    assert y.tolist() == [3.0] * 4


# -- Pinned and managed memory are labelled as what they are --------------------------

def test_pinned_and_managed_memory_are_classified():
    cupy = cuda_peer("cupy")
    pinned = cupy.cuda.alloc_pinned_memory(64)
    managed = cupy.cuda.malloc_managed(64)
    device = cupy.cuda.alloc(64)
    for memory, label in [(pinned, "cuda_host"), (managed, "cuda_managed"), (device, "cuda:0")]:
        interface = {"shape": (8,), "typestr": "<f8", "data": (memory.ptr, False), "version": 3}
        a = dlbridge.asarray(Interface(interface, memory))
        assert a.device == label and a.data_ptr == memory.ptr


def test_arrays_made_from_cuda_views_in_cpp_report_cuda():
    # The downstream Cython package adopts raw pointers through dlb::cuda views;
    # tests/python/consumers/test_cython_consumers.py checks it reports (2, 0).
    a = dlbridge.empty(3, device="cuda")
    assert a.__dlpack_device__() == (2, 0)


@pytest.mark.parametrize("device", ["cuda", "cuda_host", "cuda_managed"])
@pytest.mark.parametrize("dtype", ["float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"])
def test_zeros_and_full_of_packed_sub_byte_dtypes_on_the_gpu(device, dtype):
    for shape in [(3, 5), 1, 8, 4099]:
        for make in [lambda d: dlbridge.zeros(shape, dtype=dtype, device=d),
                     lambda d: dlbridge.full(shape, -1.5, dtype=dtype, device=d)]:
            a, expected = make(device), make(None)
            assert a.device == {"cuda": "cuda:0"}.get(device, device)
            got = a.to_device("cpu")
            assert got.tolist() == expected.tolist()
            # Packed dtypes have no buffer format: the bytes, spare bits included.
            assert ctypes.string_at(got.data_ptr, got.nbytes) == ctypes.string_at(expected.data_ptr, expected.nbytes)


# -- The memory pool --------------------------------------------------------------------

def test_release_cuda_cache_hands_back_what_torch_empty_cache_does_not():
    block = 64 << 20
    a = dlbridge.empty(block, dtype="uint8", device="cuda")
    del a  # kept by dlbridge's pool
    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # PyTorch's cache only
    assert dlbridge.release_cuda_cache() >= block
    assert dlbridge.release_cuda_cache() == 0


# -- Host waits release the GIL ----------------------------------------------------------

# Each step queues ~0.2 s of GPU work on the legacy stream, then a CuPy host
# callback (Python: it takes the GIL), then a dlbridge call that waits for that
# stream. Holding the GIL through the wait would deadlock: the wait needs the
# callback, the callback the GIL. Run apart, so that a deadlock is a timeout.
_GIL_STEPS = """
import cupy
import torch

import dlbridge
N = 1 << 20
def busy_then_callback():
    with torch.cuda.stream(torch.cuda.default_stream()):
        torch.cuda._sleep(1)
        torch.cuda.synchronize()
        torch.cuda._sleep(400_000_000)
    cupy.cuda.Stream.null.launch_host_func(lambda _: None, None)
class Interface:
    def __init__(self, a):
        self.a = a
        self.__cuda_array_interface__ = dict(a.__cuda_array_interface__, stream=1)
pinned = dlbridge.zeros(N, dtype="float32", device="cuda_host")
def free_pinned():
    a = dlbridge.empty(N, device="cuda_host")
    busy_then_callback()
    del a  # cudaFreeHost, from the release of the last reference
steps = {
    "full cuda_host": lambda: dlbridge.full(N, 1.0, dtype="float32", device="cuda_host"),
    "zeros cuda_managed": lambda: dlbridge.zeros(N, dtype="float32", device="cuda_managed"),
    "import of pinned memory": lambda: dlbridge.asarray(Interface(pinned)),
    "copy to pinned memory": lambda: pinned.to_device("cuda").to_device("cuda_host"),
}
for name, step in steps.items():
    busy_then_callback()
    step()
    print("done:", name, flush=True)
free_pinned()
print("done: free of pinned memory", flush=True)
torch.cuda.synchronize()
"""


def test_host_waits_release_the_gil():
    import subprocess
    import sys

    cuda_peer("cupy")
    try:
        run = subprocess.run([sys.executable, "-c", _GIL_STEPS], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"a host wait held the GIL (deadlock); steps done: {e.stdout!r}")
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("done:") == 5, run.stdout


# -- fork() -----------------------------------------------------------------------------

def test_a_child_forked_after_a_mere_import_may_use_cuda():
    # Apart, since this process has used CUDA: the parent only imports dlbridge.
    import subprocess
    import sys

    code = """if True:
        import os
        import dlbridge
        pid = os.fork()
        if pid == 0:
            a = dlbridge.full(3, 2.0, dtype="float32", device="cuda")
            os._exit(0 if a.to_device("cpu").tolist() == [2.0] * 3 else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    """
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_a_child_forked_after_cuda_was_used_refuses_it_cleanly():
    held = {"pinned": dlbridge.full(4, 1.0, dtype="float32", device="cuda_host"),
            "device": dlbridge.zeros(4, dtype="float32", device="cuda")}

    def checks():
        failures = 0
        try:
            dlbridge.zeros(1, device="cuda")
            failures |= 1
        except RuntimeError as e:
            failures |= 0 if "forked after CUDA was initialised in its parent" in str(e) else 1
        try:
            held["pinned"].tolist()
            failures |= 2
        except BufferError as e:
            failures |= 0 if "inherited across fork()" in str(e) else 2
        failures |= 0 if dlbridge.build_info()["gpu_count"] == 0 else 4
        failures |= 0 if dlbridge.release_cuda_cache() == 0 else 8
        held.clear()  # the child's last references: their releases free nothing, CUDA is not called
        return failures

    in_forked_child(checks)
    assert held["pinned"].tolist() == [1.0] * 4 and values(held["device"]) == [0.0] * 4


# -- Stream ordering --------------------------------------------------------------------

def _slow_write(t, value, stream):
    """Queues, on `stream`, a ~0.2 s kernel and then t.fill_(value). Both
    kernels run once first: a kernel is loaded at its first launch, which may
    wait for the GPU to go idle, and so let the write land before a read that
    races it."""
    with torch.cuda.stream(stream):
        torch.cuda._sleep(1)
        torch.empty_like(t).fill_(value)
    stream.synchronize()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(SLOW_CYCLES)
        t.fill_(value)


# ordered=False is the control: it shows the read can race ahead, so the
# ordered case can fail. The race needs two streams running at once.
@pytest.mark.parametrize("ordered", [True, pytest.param(False, marks=race_control)])
def test_dlpack_orders_the_consumer_stream_after_the_writer(ordered):
    # dlbridge's array is written on the legacy default stream (torch's default
    # stream); the consumer reads on a non-blocking stream it names. Its
    # memory is allocated, and its read launched once, before the write is
    # queued, so that nothing in the race allocates or loads a kernel.
    a = dlbridge.zeros(N, dtype="float32", device="cuda")
    shared = torch.from_dlpack(a)
    consumer = torch.cuda.Stream()
    with torch.cuda.stream(consumer):
        seen = torch.empty_like(shared).copy_(shared).fill_(-1.0)
    torch.cuda.synchronize()
    _slow_write(shared, 1.0, torch.cuda.default_stream())
    capsule_owner = _Once(a, stream=consumer.cuda_stream if ordered else -1)
    with torch.cuda.stream(consumer):
        seen.copy_(torch.from_dlpack(capsule_owner))
    consumer.synchronize()
    if ordered:
        assert seen.min().item() == 1.0
    else:
        # Declining the order lets the read race ahead of the slow writer.
        assert seen.min().item() == 0.0
    torch.cuda.synchronize()


class _Once:
    """Passes one fixed stream to dlbridge's __dlpack__, whatever torch asks."""

    def __init__(self, a, stream):
        self.a, self.stream = a, stream

    def __dlpack__(self, **kwargs):
        kwargs["stream"] = self.stream
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


@pytest.mark.parametrize("ordered", [True, pytest.param(False, marks=race_control)])
def test_cuda_array_interface_import_waits_on_the_producer_stream(ordered):
    t = torch.zeros(N, device="cuda")
    torch.cuda.synchronize()
    producer = torch.cuda.Stream()
    _slow_write(t, 1.0, producer)
    interface = dict(t.__cuda_array_interface__, version=3)
    interface["stream"] = producer.cuda_stream if ordered else None
    a = dlbridge.asarray(Interface(interface, t))
    seen = a.copy().to_device("cpu")  # dlbridge work, on the legacy default stream
    if ordered:
        assert np.from_dlpack(seen).min() == 1.0
    else:
        assert np.from_dlpack(seen).min() == 0.0
    torch.cuda.synchronize()


def test_streams_are_checked():
    a = dlbridge.zeros(2, device="cuda")
    with pytest.raises(ValueError, match="stream 0 is ambiguous"):
        a.__dlpack__(stream=0, max_version=(1, 3))
    # The per-thread default stream waits for the legacy one; -1 orders nothing.
    for stream in (2, -1, torch.cuda.Stream().cuda_stream):
        assert torch.from_dlpack(_Once(a, stream)).data_ptr() == a.data_ptr


# -- Pinned and managed memory are ready for the host ---------------------------------
# The legacy default stream (torch's default stream) is kept busy for ~0.2 s,
# so that dlbridge's work queued after it finishes long after the call
# returns unless dlbridge waits for it: a host read that does not wait sees
# the memory as it was, not the values. Each test runs its operations once
# before the race, so that no kernel is loaded (which may wait for the GPU
# to go idle) inside it.

def _busy_legacy_stream():
    with torch.cuda.stream(torch.cuda.default_stream()):
        torch.cuda._sleep(1)
        torch.cuda.synchronize()
        torch.cuda._sleep(SLOW_CYCLES)


def _busy_after_allocating(device):
    """The control of a test that allocates `device` memory inside its race:
    an allocation of that memory, made after the work queued on the legacy
    stream. Where it waits for the GPU (a driver may make cudaHostAlloc or
    cudaMallocManaged synchronise), the race cannot happen and the test
    would pass without dlbridge waiting: skipped, saying so. The allocation
    is returned, to be kept until the end: freeing pinned memory waits for
    the GPU too."""
    busy = torch.cuda.Event()
    busy.record(torch.cuda.default_stream())
    probe = dlbridge.empty(N, dtype="float32", device=device)
    if busy.query():
        pytest.skip(f"allocating {device} memory waited for the GPU here: no race to show")
    return probe


@pytest.mark.parametrize("device", ["cuda_host", "cuda_managed"])
def test_fill_of_pinned_and_managed_memory_is_ready_for_the_host(device):
    dlbridge.full(N, 3.0, dtype="float32", device=device)
    _busy_legacy_stream()
    probe = _busy_after_allocating(device)
    a = dlbridge.full(N, 3.0, dtype="float32", device=device)
    assert np.asarray(a).min() == 3.0  # the buffer protocol: no stream at all
    torch.cuda.synchronize()
    del probe


@pytest.mark.parametrize("device", ["cuda_host", "cuda_managed"])
def test_copies_into_pinned_and_managed_memory_are_ready_for_the_host(device):
    d = dlbridge.zeros(N, dtype="float32", device="cuda")
    d.to_device(device), dlbridge.asarray(d, dtype="float64", device=device)
    _slow_write(torch.from_dlpack(d), 1.0, torch.cuda.default_stream())  # on the legacy stream
    probe = _busy_after_allocating(device)
    for out in (d.to_device(device), dlbridge.asarray(d, dtype="float64", device=device)):
        assert out.device == device
        assert np.asarray(out).min() == 1.0
    torch.cuda.synchronize()
    del probe


def test_copy_from_pinned_memory_is_done_before_the_host_writes_it_again():
    pinned = dlbridge.full(N, 1.0, dtype="float32", device="cuda_host")
    pinned.to_device("cuda")
    _busy_legacy_stream()
    d = pinned.to_device("cuda")
    np.asarray(pinned)[:] = 2.0  # would overtake a copy still queued behind the busy stream
    assert values(d) == [1.0] * N
    torch.cuda.synchronize()


def test_cuda_array_interface_of_pinned_memory_waits_for_the_producer_stream():
    # The producer's stream copies ones into pinned memory after ~0.2 s.
    pinned = torch.zeros(N, pin_memory=True)
    ones = torch.ones(N, device="cuda")
    torch.empty(N, pin_memory=True).copy_(ones, non_blocking=True)
    torch.cuda._sleep(1)
    torch.cuda.synchronize()
    producer = torch.cuda.Stream()
    with torch.cuda.stream(producer):
        torch.cuda._sleep(SLOW_CYCLES)
        pinned.copy_(ones, non_blocking=True)
    interface = {"shape": (N,), "typestr": "<f4", "data": (pinned.data_ptr(), False), "version": 3,
                 "stream": producer.cuda_stream}
    a = dlbridge.asarray(Interface(interface, pinned))
    assert a.device == "cuda_host"
    assert np.asarray(a).min() == 1.0
    torch.cuda.synchronize()


def test_dlpack_import_with_a_copy_tells_the_producer_its_stream():
    # torch's current stream is a side stream with a slow write queued: told
    # stream 1, torch orders the legacy stream (where dlbridge copies) after it.
    t = torch.zeros(N, device="cuda")
    side = torch.cuda.Stream()
    _slow_write(t, 0.0, side)  # loads the kernels; writes what t holds
    side.synchronize()
    dlbridge.from_dlpack(t, copy=True), dlbridge.from_dlpack(t, device="cpu"), dlbridge.asarray(t, dtype="float64")
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLOW_CYCLES)
        t.fill_(1.0)
        for copy in (dlbridge.from_dlpack(t, copy=True), dlbridge.from_dlpack(t, device="cpu"),
                     dlbridge.asarray(t, dtype="float64")):
            assert copy.data_ptr != t.data_ptr()
            assert values(copy) == [1.0] * N
    torch.cuda.synchronize()


class _Recording:
    """A torch tensor behind a plain __dlpack__ (no exchange table), which
    records the keywords it is called with."""

    def __init__(self, t):
        self.t, self.calls = t, []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        return self.t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


@pytest.mark.parametrize("through", ["table", "dunder"])
def test_copy_true_of_a_torch_tensor_is_made_by_dlbridge(through):
    # Asked for a copy, PyTorch orders the consumer's stream after its
    # current one and only then copies, on its current stream: a consumer
    # would read that copy unwritten, and PyTorch frees it without waiting
    # for the read. dlbridge takes the shared tensor and copies it itself.
    t = torch.zeros(N, device="cuda")
    side = torch.cuda.Stream()
    _slow_write(t, 0.0, side)  # loads the kernels
    side.synchronize()
    source = t if through == "table" else _Recording(t)
    dlbridge.from_dlpack(source, copy=True)
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLOW_CYCLES)
        t.fill_(1.0)
        copy = dlbridge.from_dlpack(source, copy=True)
    assert copy.data_ptr != t.data_ptr()
    assert values(copy) == [1.0] * N
    if through == "dunder":
        assert source.calls and all("copy" not in kwargs for kwargs in source.calls), source.calls
    torch.cuda.synchronize()


# -- Copies between GPUs ------------------------------------------------------------------

def test_copy_between_gpus_waits_for_the_source_gpu():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")  # in the body: a missing GPU is reported first
    a = dlbridge.zeros(N, dtype="float32", device="cuda:0")
    with torch.cuda.device(0):
        _slow_write(torch.from_dlpack(a), 1.0, torch.cuda.default_stream(0))
    b = a.to_device("cuda:1")
    assert b.device == "cuda:1"
    assert values(b) == [1.0] * N
    del a  # its free on GPU 0's legacy stream waits for the copy
    assert values(b) == [1.0] * N
    torch.cuda.synchronize()


# -- CUDA graphs ----------------------------------------------------------------------------

def test_dlpack_export_into_a_cuda_graph_capture():
    # torch.from_dlpack inside torch.cuda.graph names the capturing stream:
    # the order after dlbridge's legacy stream must leave no wait on an
    # outside event in the capture, and the release of the temporary tensor,
    # still inside the capture, must not make the legacy stream wait on an
    # event recorded in the capture, or the capture is invalidated.
    a = dlbridge.full(N, 2.0, dtype="float32", device="cuda")
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        doubled = torch.from_dlpack(a) * 2  # the borrowed tensor is released here
    for _ in range(2):
        graph.replay()
        torch.cuda.synchronize()
        assert doubled.min().item() == doubled.max().item() == 4.0
    del a  # the graph is replayed no more


def _capturing(work):
    """Captures x * 2 into a CUDA graph, calls `work(x, y, stream)` inside the
    capture (y the captured product, stream the capturing stream's int), then
    y + 1; replays the graph twice and checks it: `work` left the capture valid."""
    x = torch.ones(N, device="cuda")
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = x * 2
        work(x, y, torch.cuda.current_stream().cuda_stream)
        z = y + 1
    for _ in range(2):
        graph.replay()
        torch.cuda.synchronize()
        assert z.min().item() == z.max().item() == 3.0
    return z


def _refused(what, stream):
    return pytest.raises(BufferError, match=rf"^cannot {what} stream {stream} while it is being captured into a "
                                            rf"CUDA graph: .*; do it before the capture begins or after it ends$")


def test_imports_inside_a_cuda_graph_capture_are_refused_leaving_it_valid():
    # Inside torch.cuda.graph, PyTorch's current stream (which its exchange
    # table names) is capturing: y holds nothing until the graph is launched,
    # and ordering dlbridge's legacy stream after an event recorded in the
    # capture would invalidate it. The import is refused before any work.
    if not hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        pytest.skip("this PyTorch has no DLPack exchange table: its own __dlpack__ orders across the capture")

    def work(x, y, stream):
        with _refused("import data ready on", stream):
            dlbridge.from_dlpack(y)
        with _refused("import data ready on", stream):
            dlbridge.asarray(y)
        with _refused("import data ready on", stream):
            dlbridge.from_dlpack(x, copy=True)  # even data written before the capture: the stream alone is known
        interface = dict(y.__cuda_array_interface__, version=3, stream=stream)
        with _refused("import data ready on", stream):
            dlbridge.asarray(Interface(interface, y))

    z = _capturing(work)
    assert values(dlbridge.from_dlpack(z)) == [3.0] * N  # after the capture, imported as usual


@pytest.mark.parametrize("target", ["cpu", "cuda_host", "cuda_managed"])
def test_copies_on_a_capturing_stream_are_refused_leaving_it_valid(target):
    # A copy captured into the graph would write, at every launch, into
    # memory dlbridge's pool hands out again once the result is dropped; the
    # legacy stream cannot be ordered after it, nor the host wait for it.
    a = dlbridge.full(N, 2.0, dtype="float32", device="cuda")

    def work(x, y, stream):
        with _refused("copy on", stream):
            a.to_device(target, stream=stream)

    _capturing(work)
    side = torch.cuda.Stream()
    assert values(a.to_device(target, stream=side.cuda_stream)) == [2.0] * N  # outside a capture, as usual


# -- Consumer streams destroyed before the release ---------------------------------------------

# recorded=True is the control: it does what a release that records on the
# consumer's stream would do, and shows the legacy stream would then wait.
@pytest.mark.parametrize("recorded", [False, pytest.param(True, marks=race_control)])
def test_a_release_touches_no_blocking_stream_which_may_be_gone_by_then(recorded):
    # CuPy's `with Stream():` names a blocking stream to __dlpack__ and
    # destroys it when the block ends, before the array made from the capsule
    # is dropped. The legacy stream synchronises with blocking streams by
    # itself, so the release must not touch that stream: recording on a
    # destroyed handle is undefined, and here the driver hands the handle to
    # the next stream made, which a slow kernel keeps busy.
    cupy = cuda_peer("cupy")
    a = dlbridge.full(N, 1.0, dtype="float32", device="cuda")
    torch.cuda.synchronize()
    with cupy.cuda.Stream():
        gone = cupy.cuda.get_current_stream().ptr
        y = cupy.from_dlpack(a)
        assert float(y.sum()) == N
    cupy.cuda.Device().synchronize()
    reborn = cupy.cuda.Stream(non_blocking=True)
    if reborn.ptr != gone:
        pytest.skip("the driver did not hand the destroyed stream's handle out again: the test shows nothing")
    busy = torch.cuda.ExternalStream(reborn.ptr)
    with torch.cuda.stream(busy):
        torch.cuda._sleep(1)
    busy.synchronize()
    with torch.cuda.stream(busy):
        torch.cuda._sleep(SLOW_CYCLES)
    if recorded:
        torch.cuda.default_stream().wait_stream(busy)
    del y  # releases the capsule
    if recorded:
        assert not torch.cuda.default_stream().query()
    else:
        assert torch.cuda.default_stream().query(), "the release made the legacy stream wait on a stranger's stream"
    busy.synchronize()
    torch.cuda.synchronize()


# -- Frees ordered after the consumer ---------------------------------------------------------

def test_memory_lent_to_a_consumer_stream_is_not_reused_under_its_work():
    # The consumer reads on its own non-blocking stream behind a slow kernel,
    # then lets the array go; dlbridge's next allocation of the same size, on
    # the legacy stream, gets the same block from the pool and fills it.
    a = dlbridge.full(N, 1.0, dtype="float32", device="cuda")
    consumer = torch.cuda.Stream()
    with torch.cuda.stream(consumer):
        torch.cuda._sleep(1)
        torch.from_dlpack(a).clone()
    torch.cuda.synchronize()
    with torch.cuda.stream(consumer):
        t = torch.from_dlpack(a)  # names the consumer's stream
        torch.cuda._sleep(SLOW_CYCLES)
        seen = t.clone()
    block = a.data_ptr
    del t, a  # the free, on the legacy stream, must wait for the clone
    b = dlbridge.full(N, 2.0, dtype="float32", device="cuda")
    assert b.data_ptr == block, "the pool did not hand the block out again: the test shows nothing"
    consumer.synchronize()
    assert seen.min().item() == seen.max().item() == 1.0
    torch.cuda.synchronize()


def test_memory_borrowed_through_the_exchange_table_is_not_reused_under_dlbridge_work():
    # A tensor made on a PyTorch side stream comes in through PyTorch's C
    # exchange table; dlbridge copies it on the legacy stream behind a slow
    # kernel and lets it go. PyTorch's allocator then hands the block out on
    # the side stream, whose write must wait for dlbridge's copy.
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        t = torch.ones(N, device="cuda")
        a = dlbridge.from_dlpack(t)
    a.copy()
    side.synchronize()
    _busy_legacy_stream()
    copied = a.copy()  # queued behind the slow kernel
    block = t.data_ptr()
    del t, a
    with torch.cuda.stream(side):
        reused = torch.empty(N, device="cuda")
        reused.fill_(9.0)
    assert reused.data_ptr() == block, "PyTorch did not hand the block out again: the test shows nothing"
    assert values(copied) == [1.0] * N
    torch.cuda.synchronize()
