"""The Python CUDA suite: runs only where a GPU is usable (an H100 with PyTorch,
CuPy and JAX built for CUDA), and skips, saying why, elsewhere. Zero copy is
proven by pointer equality; stream ordering by a slow kernel on the writer's
stream and a read on another one, once with the ordering (the read sees the
written values) and once with ordering declined (stream=-1, or no "stream" in
the interface), which shows the read can race ahead."""
import numpy as np
import pytest

import dlbridge
from dlpack_ctypes import FLAG_IS_COPIED, Consumed
from gpu import cuda_peer, needs_gpu, race_control

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
    # tests/python/test_cython_consumers.py checks it reports (2, 0).
    a = dlbridge.empty(3, device="cuda")
    assert a.__dlpack_device__() == (2, 0)


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
