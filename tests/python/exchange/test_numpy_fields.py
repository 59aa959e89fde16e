"""from_dlpack and asarray of an exact numpy.ndarray read the array's own
fields (numpy_arrays.hpp) rather than asking its __dlpack__ for a capsule.
The result must be the one the protocol gives, in every respect a user can
see, and what DLPack cannot carry must still fail in NumPy's words."""
import gc
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import dlbridge

pytestmark = pytest.mark.numpy_jax  # exchanges with NumPy or JAX: the floor stage runs it again (conftest.py)


class Protocol:
    """The same ndarray, reachable only through the DLPack protocol."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def _seen(a):
    # An empty array's strides are left out: NumPy 2.1's __dlpack__ exports
    # them in C order, later versions as the array has them (the fields give
    # the array's own, checked below).
    return (a.shape, a.strides if a.size else None, a.dtype, a.device, a.readonly, a.data_ptr)


DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "intc", "uintc",
          "longlong", "ulonglong", "float16", "float32", "float64", "complex64", "complex128"]


def _arrays():
    rng = np.random.default_rng(12)
    for name in DTYPES:
        base = (rng.integers(0, 2, (4, 6, 5)) if name == "bool" else rng.integers(0, 100, (4, 6, 5))).astype(name)
        yield name, base
        yield f"{name} reversed, stepped", base[::-1, ::2, 1:]
        yield f"{name} transposed", base.transpose(2, 0, 1)
        yield f"{name} 0-d", base[1, 2, 3, ...]
        yield f"{name} empty", base[:, :0]
        yield f"{name} broadcast", np.broadcast_to(base[0], (3, 6, 5))
        frozen = base.copy()
        frozen.flags.writeable = False
        yield f"{name} read-only", frozen


@pytest.mark.parametrize("how", ["from_dlpack", "asarray"])
def test_the_fields_give_what_the_protocol_gives(how):
    convert = getattr(dlbridge, how)
    for label, x in _arrays():
        got, want = convert(x), dlbridge.from_dlpack(Protocol(x))
        assert _seen(got) == _seen(want), label
        assert got.strides == tuple(s // x.itemsize for s in x.strides), label
        assert got.tolist() == x.tolist(), label


def test_writes_go_both_ways_and_read_only_stays_read_only():
    x = np.zeros((2, 3))
    a = dlbridge.from_dlpack(x)
    x[1, 2] = 5.0
    assert a[1, 2].item() == 5.0
    np.asarray(a)[0, 0] = 7.0
    assert x[0, 0] == 7.0
    x.flags.writeable = False
    frozen = dlbridge.asarray(x)
    assert frozen.readonly
    with pytest.raises(ValueError):
        np.asarray(frozen)[0, 0] = 1.0
    copied = dlbridge.from_dlpack(x, copy=True)
    assert not copied.readonly and copied.data_ptr != x.ctypes.data


def test_copy_and_device_keep_their_meaning():
    x = np.arange(4.0)
    assert dlbridge.from_dlpack(x, copy=False).data_ptr == x.ctypes.data
    assert dlbridge.from_dlpack(x, device="cpu").data_ptr == x.ctypes.data
    assert dlbridge.asarray(x, copy=True).data_ptr != x.ctypes.data
    assert dlbridge.asarray(x, dtype="float32").dtype.name == "float32"


def test_the_array_keeps_the_ndarray_alive_and_lets_it_go():
    x = np.arange(1000.0)
    gone = weakref.ref(x)
    before = sys.getrefcount(x)
    a = dlbridge.from_dlpack(x)
    v = a[10:20]
    assert sys.getrefcount(x) == before + 1  # one reference, shared by the view
    del x
    gc.collect()
    assert gone() is not None and v[0].item() == 10.0
    del a, v
    assert gone() is None  # no cycle: released without the collector


def test_repeated_imports_and_failures_leak_no_reference():
    x = np.arange(6.0).reshape(2, 3)
    swapped = np.arange(3, dtype=">f8")
    before = sys.getrefcount(x), sys.getrefcount(swapped)
    for _ in range(200):
        dlbridge.asarray(x)
        dlbridge.from_dlpack(x[::-1])
        with pytest.raises(BufferError):
            dlbridge.from_dlpack(swapped)
    assert (sys.getrefcount(x), sys.getrefcount(swapped)) == before


UNCARRIED = [
    ("byte-swapped", lambda: np.arange(3, dtype=">f8")),
    ("datetime", lambda: np.zeros(3, "M8[s]")),
    ("object", lambda: np.zeros(3, object)),
    ("structured", lambda: np.zeros(3, "i1,f4")),
    ("unicode", lambda: np.zeros(3, "U3")),
    ("longdouble", lambda: np.zeros(3, np.longdouble)),
    ("strides not whole elements", lambda: as_strided(np.zeros(8, np.int32), shape=(3,), strides=(6,))),
]


@pytest.mark.parametrize("label, make", UNCARRIED, ids=[u[0] for u in UNCARRIED])
@pytest.mark.parametrize("how", ["from_dlpack", "asarray"])
def test_what_dlpack_cannot_carry_fails_in_numpys_words(label, make, how):
    # NumPy's words, and what NumPy's own messages leave out: the dtype.
    x = make()
    with pytest.raises(BufferError) as numpy_said:
        np.from_dlpack(x)
    with pytest.raises(BufferError) as dlbridge_said:
        getattr(dlbridge, how)(x)
    assert str(dlbridge_said.value) == f"{numpy_said.value} (from ndarray.__dlpack__(); got dtype {x.dtype})"
    assert type(dlbridge_said.value.__cause__) is BufferError  # NumPy's own exception


def test_unaligned_data_still_arrives_through_the_protocol():
    x = np.frombuffer(bytearray(17), "f8", 2, 1)
    assert not x.flags.aligned
    a = dlbridge.from_dlpack(x)
    assert a.data_ptr == x.ctypes.data and a.shape == (2,)


def test_a_subclass_answers_through_its_own_dlpack():
    class Refusing(np.ndarray):
        def __dlpack__(self, **kwargs):
            raise BufferError("Refusing says no")

    x = np.arange(3.0).view(Refusing)
    for how in (dlbridge.from_dlpack, dlbridge.asarray):
        with pytest.raises(BufferError, match="Refusing says no"):
            how(x)


# -- when NumPy's C API is imported --------------------------------------------
# Process-wide state: each case runs in a fresh interpreter, where NumPy is not
# imported until the case imports it.

FRESH = """
import sys
import dlbridge
from dlbridge._importers import _reads_ndarray_fields

# A type merely named numpy.ndarray (all that is read of a type before NumPy's
# C API is imported), whose __dlpack__ answers.
Fake = type("numpy.ndarray", (), {"__dlpack__": lambda self, **kwargs: dlbridge.zeros(3).__dlpack__(**kwargs),
                                  "__dlpack_device__": lambda self: (1, 0)})
fake = Fake()
assert type(fake).__name__ == "numpy.ndarray"
"""


def run_fresh(code):
    result = subprocess.run([sys.executable, "-c", FRESH + textwrap.dedent(code)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_type_merely_named_ndarray_imports_nothing_and_spoils_nothing():
    run_fresh("""
        assert dlbridge.from_dlpack(fake).tolist() == [0.0] * 3 and not _reads_ndarray_fields(fake)
        assert "numpy" not in sys.modules  # a name is no reason to import NumPy
        import numpy as np
        x = np.arange(3.0)
        assert _reads_ndarray_fields(x) and not _reads_ndarray_fields(fake)
        assert dlbridge.from_dlpack(x).data_ptr == x.ctypes.data
        assert dlbridge.from_dlpack(fake).tolist() == [0.0] * 3
    """)


def test_a_type_named_ndarray_while_numpy_cannot_be_imported_spoils_nothing():
    run_fresh("""
        sys.modules["numpy"] = None  # import numpy fails
        assert dlbridge.from_dlpack(fake).tolist() == [0.0] * 3
        del sys.modules["numpy"]
        import numpy as np
        assert _reads_ndarray_fields(np.arange(3.0))
    """)


def test_an_import_of_numpys_c_api_that_fails_is_tried_again():
    run_fresh("""
        import numpy as np
        core = sys.modules["numpy._core._multiarray_umath"]
        table = core._ARRAY_API
        del core._ARRAY_API  # NumPy's C API cannot be imported, this once
        x = np.arange(3.0)
        assert dlbridge.from_dlpack(x).tolist() == [0.0, 1.0, 2.0]  # through x.__dlpack__
        assert not _reads_ndarray_fields(x)
        core._ARRAY_API = table
        assert _reads_ndarray_fields(x) and not _reads_ndarray_fields(fake)
        assert dlbridge.from_dlpack(x).data_ptr == x.ctypes.data
    """)
