# What `from dlbridge cimport ...` gives another Cython package:
#
#   from dlbridge cimport Array, wrap, wrap_like, cpp
#
# Array: the extension type; `arr.t` is its dlb::tensor (declared in cpp.pxd).
# wrap: makes an Array from a dlb::tensor (moving it), e.g. one made in C++.
# wrap_like: the same, in the caller's currency (an ndarray for an ndarray...).
# cpp: the C++ core (tensors, DLTensor, typed views and their checks).
#
# dlbridge's own .pxd files cimport cpp as `cimport dlbridge.cpp as cpp`,
# never `from dlbridge cimport cpp`: the latter loads this file, which
# cimports dlbridge._array, and while Cython compiles dlbridge._array that
# module's .pxd is still half read ("'dlbridge/_array/wrap.pxd' not found").
from dlbridge._array cimport Array, wrap, wrap_like
