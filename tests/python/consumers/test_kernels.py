"""tests/downstream/kernels: a package written as an extension author
would, with dlbridge's Cython API (issue 24): a float32-or-float64 corner
detector that returns a new array like its input, and an in-place
H x W x 3 uint8 kernel. Built with pip against the INSTALLED dlbridge, then
called with NumPy, PyTorch, JAX and dlbridge inputs."""
import sys

import numpy as np
import pytest

import dlbridge
from paths import DOWNSTREAM

PACKAGE = DOWNSTREAM / "kernels"


@pytest.fixture(scope="module")
def kernels(kernels_package):
    sys.path.insert(0, str(kernels_package))
    try:
        import dlb_kernels
    finally:
        sys.path.remove(str(kernels_package))
    return dlb_kernels


def moravec_reference(image, w=1):
    """The kernel's definition, in NumPy: each pixel's least sum of squared
    differences between its (2w+1)^2 window and a neighbour's, 0 near edges."""
    img = np.asarray(image, np.float64)
    out = np.zeros(img.shape)
    rows, cols = img.shape
    for r in range(w + 1, rows - w - 1):
        for c in range(w + 1, cols - w - 1):
            here = img[r - w:r + w + 1, c - w:c + w + 1]
            out[r, c] = min(((here - img[br - w:br + w + 1, bc - w:bc + w + 1]) ** 2).sum()
                            for br in (r - 1, r, r + 1) for bc in (c - 1, c, c + 1) if (br, bc) != (r, c))
    return out


@pytest.fixture
def x64():
    """JAX with float64 (its default turns float64 into float32), for one test."""
    import jax
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)


def producers():
    """(name, make(ndarray) -> that library's array on the same values, to_numpy, its array type)."""
    import jax
    import jax.numpy as jnp
    import torch
    return [("NumPy", lambda a: a, np.asarray, np.ndarray),
            ("torch", torch.from_numpy, lambda t: t.numpy(), torch.Tensor),
            ("JAX", jnp.asarray, np.asarray, jax.Array),
            ("Array", dlbridge.asarray, np.asarray, dlbridge.Array)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("window_size", [0, 1, 2])
def test_corner_moravec_returns_a_new_array_like_its_input(kernels, x64, dtype, window_size):
    image = np.random.default_rng(24).random((9, 11)).astype(dtype)
    want = moravec_reference(image, window_size)
    for name, make, to_numpy, kind in producers():
        x = make(image.copy())
        out = kernels.corner_moravec(x, window_size=window_size)
        assert isinstance(out, kind), (name, type(out))
        got = to_numpy(out)
        assert got.dtype == np.dtype(dtype) and got.shape == image.shape, (name, got.dtype, got.shape)
        np.testing.assert_allclose(got, want.astype(dtype), rtol=1e-5 if dtype == "float32" else 1e-12,
                                   atol=0, err_msg=name)
        np.testing.assert_array_equal(to_numpy(x), image, err_msg=f"{name}: the input changed")


def test_corner_moravec_of_small_and_empty_images(kernels):
    for shape in [(0, 0), (0, 5), (1, 1), (3, 3), (4, 4)]:
        out = kernels.corner_moravec(np.ones(shape, np.float32))
        assert out.shape == shape and out.dtype == np.float32 and not out.any(), shape


def test_brighten_doubles_in_place_and_saturates(kernels):
    values = np.arange(2 * 5 * 3, dtype=np.uint8).reshape(2, 5, 3) * 9
    want = np.minimum(255, 2 * values.astype(np.int64)).astype(np.uint8)
    import torch
    for name, make, to_numpy in [("NumPy", lambda a: a, np.asarray), ("torch", torch.from_numpy, lambda t: t.numpy()),
                                 ("Array", dlbridge.asarray, np.asarray)]:
        x = make(values.copy())
        assert kernels.brighten_(x) is None
        np.testing.assert_array_equal(to_numpy(x), want, err_msg=name)
    # Any strides: a view of every other row of a bigger image, written where it lies.
    big = np.zeros((4, 5, 3), np.uint8) + 100
    kernels.brighten_(big[::2])
    assert (big[::2] == 200).all() and (big[1::2] == 100).all()


def wrong_inputs():
    import jax.numpy as jnp
    import torch
    image = "corner_moravec(): argument 'image': "
    rgb = "brighten_(): argument 'image': "
    return [
        (lambda k: k.corner_moravec(np.zeros((4, 4), np.int32)), TypeError, image + "expected float32 or float64, got int32"),
        (lambda k: k.corner_moravec(torch.zeros(4, 4, dtype=torch.float16)), TypeError,
         image + "expected float32 or float64, got float16"),
        (lambda k: k.corner_moravec(np.zeros((4, 4), np.float32, order="F")), TypeError,
         image + "expected C-contiguous strides, got strides (1, 4)"),
        (lambda k: k.corner_moravec(np.zeros((4, 4, 1))), TypeError, image + "expected ndim 2, got 3"),
        (lambda k: k.corner_moravec([[1.0, 2.0]]), TypeError,
         image + "expected an array (an object with __dlpack__, __cuda_array_interface__, __array_interface__ "
                 "or the buffer protocol), got list"),
        (lambda k: k.corner_moravec(np.zeros((4, 4)), window_size=-1), ValueError,
         "corner_moravec(): window_size must be >= 0, got -1"),
        (lambda k: k.brighten_(np.zeros((2, 2, 4), np.uint8)), TypeError, rgb + "axis 2: expected extent 3, got 4"),
        (lambda k: k.brighten_(np.zeros((2, 2, 3), np.int16)), TypeError, rgb + "expected uint8, got int16"),
        (lambda k: k.brighten_(np.zeros((2, 3), np.uint8)), TypeError, rgb + "expected ndim 3, got 2"),
        (lambda k: k.brighten_(np.broadcast_to(np.zeros(3, np.uint8), (2, 2, 3))), TypeError,
         rgb + "expected writable data, got read-only data"),
        (lambda k: k.brighten_(jnp.zeros((2, 2, 3), jnp.uint8)), TypeError,
         rgb + "expected writable data, got read-only data"),
        (lambda k: k.brighten_(None), TypeError,
         rgb + "expected an array (an object with __dlpack__, __cuda_array_interface__, __array_interface__ "
               "or the buffer protocol), got NoneType"),
    ]


def test_each_wrong_input_is_named(kernels):
    for call, kind, message in wrong_inputs():
        with pytest.raises(kind) as e:
            call(kernels)
        assert str(e.value) == message
        assert e.value.__cause__ is None and e.value.__context__ is None, message


def test_inputs_keep_no_reference(kernels):
    import torch
    image = np.random.default_rng(1).random((6, 6))
    rgb = np.zeros((3, 3, 3), np.uint8)
    for x in (image, torch.from_numpy(image.astype(np.float32)), dlbridge.asarray(image)):
        before = sys.getrefcount(x)
        for _ in range(1000):
            kernels.corner_moravec(x)
        assert sys.getrefcount(x) == before, type(x)
    before = sys.getrefcount(rgb)
    for _ in range(1000):
        kernels.brighten_(rgb)
        for call, kind, _ in wrong_inputs()[:4]:
            with pytest.raises(kind):
                call(kernels)
    assert sys.getrefcount(rgb) == before


def test_results_own_their_memory(kernels):
    """A result outlives its input and is the only holder of its memory:
    writing it changes nothing else, and it frees when it goes."""
    import gc
    import weakref
    x = np.random.default_rng(2).random((6, 7))
    out = kernels.corner_moravec(x)
    assert out.flags.writeable and out.flags.c_contiguous and not np.shares_memory(out, x)
    keeper = weakref.ref(out.base)
    del x
    gc.collect()
    out[:] = 1.0
    assert (out == 1.0).all()
    del out
    gc.collect()
    assert keeper() is None
