# cython: language_level=3
"""DType and Device: the value types of dlbridge."""
import enum
import operator

from libcpp.optional cimport optional

cimport dlbridge.cpp as cpp


cdef str _view_str(cpp.string_view v):
    return v.data()[:v.size()].decode("ascii")


# Made from device.hpp's table, the one list of DLPack device types.
DeviceType = enum.IntEnum("DeviceType", [(_view_str(cpp.device_type_table[i].name).upper(),
                                          <int>cpp.device_type_table[i].type)
                                         for i in range(cpp.device_type_table.size())],
                          module=__name__)
DeviceType.__doc__ = "The DLPack device types (``DLDeviceType``), as ``__dlpack_device__`` reports them."


cdef dict _dtypes = {}        # (code, bits, lanes) -> DType, one instance per dtype
cdef dict _dtype_names = {}   # every accepted spelling -> DType
cdef dict _device_names = {}  # "cuda" -> DeviceType.CUDA


cdef class DType:
    """An element type: a DLPack ``(code, bits, lanes)`` triple with a name.

    ``DType(spec)`` accepts a DType, a name (``"float32"``, ``"bfloat16"``,
    ``"float8_e4m3fn"``), a NumPy typestr (``"<f4"``, ``"f4"``), a NumPy or
    ml_dtypes dtype or scalar type, a PyTorch dtype, a Python type (``bool``,
    ``int``, ``float``, ``complex``) or a ``(code, bits[, lanes])`` tuple.
    Unknown specs raise TypeError naming what was received. A DType never
    changes once made.
    """

    def __init__(self, spec):
        cdef cpp.dtype value = as_dtype(spec).value
        if self.initialised:  # checked after as_dtype, which may run Python code
            raise _initialised_again(self)
        self.value = value
        self.initialised = True

    @property
    def code(self):
        """The DLPack type code (``DLDataTypeCode``)."""
        return _made_dtype(self).value.code

    @property
    def bits(self):
        """Bits per element (4 and 6 for the packed sub-byte types)."""
        return _made_dtype(self).value.bits

    @property
    def lanes(self):
        return _made_dtype(self).value.lanes

    @property
    def itemsize(self):
        """Bytes per element; 1 for packed sub-byte types (see ``Array.nbytes``)."""
        return _made_dtype(self).value.itemsize()

    @property
    def name(self):
        return _view_str(cpp.find_dtype(_made_dtype(self).value).name)

    @property
    def typestr(self):
        """The NumPy array-interface typestr, or None where NumPy has no native spelling."""
        s = cpp.find_dtype(_made_dtype(self).value).typestr
        return None if s.empty() else _view_str(s)

    def __eq__(self, other):
        if not self.initialised or (isinstance(other, DType) and not (<DType>other).initialised):
            return self is other  # one made by __new__ alone is no dtype: equal to itself only
        if isinstance(other, DType):
            return self.value == (<DType>other).value
        try:
            return self.value == as_dtype(other).value
        except TypeError:
            return NotImplemented

    def __hash__(self):
        if not self.initialised:
            return object.__hash__(self)
        return hash((self.value.code, self.value.bits, self.value.lanes))

    def __repr__(self):
        return f"DType('{self.name}')" if self.initialised else f"<{type(self).__name__} holding no dtype>"

    def __str__(self):
        return self.name if self.initialised else repr(self)

    def __reduce__(self):
        return (DType, (_made_dtype(self).name,))


cdef DType dtype_from_cpp(cpp.dtype t):
    cached = _dtypes.get((t.code, t.bits, t.lanes))
    if cached is not None:
        return <DType>cached
    raise TypeError(f"dtype (code {t.code}, bits {t.bits}, lanes {t.lanes}) is not supported")


cdef _init_dtypes():
    cdef cpp.dtype t
    for i in range(cpp.dtype_table.size()):
        t = cpp.dtype_table[i].type
        d = DType.__new__(DType)
        (<DType>d).value = t
        (<DType>d).initialised = True
        _dtypes[(t.code, t.bits, t.lanes)] = d
        _dtype_names[d.name] = d
    for alias, target in (("bool_", "bool"), ("float", "float64"), ("int", "int64"),
                          ("complex", "complex128"), ("half", "float16"), ("single", "float32"),
                          ("double", "float64"), ("?", "bool")):
        _dtype_names[alias] = _dtype_names[target]
    _dtype_names[bool] = _dtype_names["bool"]
    _dtype_names[int] = _dtype_names["int64"]
    _dtype_names[float] = _dtype_names["float64"]
    _dtype_names[complex] = _dtype_names["complex128"]


_init_dtypes()


cdef DType _made_dtype(DType d):
    """d, where __init__ made it; ValueError for one made by __new__ alone,
    which holds no dtype (reading it as one would be float32's zeros)."""
    if not d.initialised:
        raise ValueError(f"this {type(d).__name__} holds no dtype: it was made by {type(d).__name__}.__new__ "
                         f"without DType.__init__")
    return d


cdef Device _made_device(Device d):
    """d, where __init__ made it; ValueError for one made by __new__ alone."""
    if not d.initialised:
        raise ValueError(f"this {type(d).__name__} holds no device: it was made by {type(d).__name__}.__new__ "
                         f"without Device.__init__")
    return d


cdef object _initialised_again(object made):
    """The error of __init__ called on a DType or Device already made: shared
    ones (every array's dtype, as_device("cpu")) would change under their users."""
    kind = "DType" if isinstance(made, DType) else "Device"
    return ValueError(f"{kind}.__init__ was called on an initialised {type(made).__name__} ({made}): a {kind} never "
                      f"changes once made; make a new one instead")


cdef bint _all_ints(tuple values):
    for v in values:
        if type(v) is not int:
            return False
    return True


cdef object _from_typestr(str spec):
    """The DType of a NumPy typestr ("<f4", "f4", "|b1"), or None."""
    cdef bytes text = spec.encode("utf-8", "replace")
    cdef optional[cpp.dtype] t = cpp.dtype_from_typestr(cpp.string_view(text, len(text)))
    return _dtypes[(t.value().code, t.value().bits, t.value().lanes)] if t.has_value() else None


cpdef DType as_dtype(object spec):
    """The DType that ``spec`` names (see ``DType``); TypeError if none."""
    if isinstance(spec, DType):
        return _made_dtype(<DType>spec)
    try:
        found = _dtype_names.get(spec)
    except TypeError:  # unhashable
        found = None
    if found is not None:
        return <DType>found
    if type(spec) is str:
        found = _from_typestr(spec)
        if found is not None:
            return <DType>found
    if isinstance(spec, tuple):
        spec = tuple(spec)  # read once (a tuple subclass may iterate differently each time)
        if 2 <= len(spec) <= 3 and _all_ints(spec):
            found = _dtypes.get((spec[0], spec[1], spec[2] if len(spec) == 3 else 1))
            if found is not None:
                return <DType>found
            raise TypeError(f"dtype {spec!r} is not a supported DLPack (code, bits, lanes) triple")
    module = getattr(type(spec), "__module__", "") or ""
    if isinstance(spec, type):
        module = getattr(spec, "__module__", "") or ""
        if module.startswith(("numpy", "ml_dtypes")):
            # A NumPy or ml_dtypes scalar type: NumPy is already imported.
            import numpy
            return as_dtype(numpy.dtype(spec))
    elif module.startswith("torch") and (text := str(spec)).startswith("torch."):
        found = _dtype_names.get(text[6:])
        if found is not None:
            return <DType>found
    elif hasattr(spec, "kind"):
        # A NumPy dtype (ml_dtypes types included), read without importing
        # NumPy: each attribute once, and only an exact str or int counts.
        byteorder, itemsize = getattr(spec, "byteorder", None), getattr(spec, "itemsize", None)
        name = getattr(spec, "name", None)
        if type(byteorder) is str and type(itemsize) is int and type(name) is str:
            if byteorder == ">" and itemsize > 1:
                raise TypeError(f"dtype {spec!r} has non-native (big-endian) byte order")
            found = _dtype_names.get(name)
            if found is not None:
                return <DType>found
    raise TypeError(f"cannot interpret {spec!r} (of type {type(spec).__name__}) as a dlbridge dtype")


cdef class Device:
    """A device: a DLPack ``(type, id)`` pair.

    ``Device("cpu")``, ``Device("cuda", 1)``, ``Device("cuda:1")``,
    ``Device(DeviceType.CUDA, 1)`` and ``Device((2, 1))`` (what
    ``__dlpack_device__`` returns) all work, as do ``torch.device`` objects.
    A Device never changes once made.
    """

    def __init__(self, type, id=None):
        cdef Device d
        if id is None:
            d = as_device(type)
        else:
            if not isinstance(type, (str, int)):
                raise TypeError(f"device type must be a name or a DeviceType, got {type!r}")
            if isinstance(type, str) and ":" in str.__str__(type):
                raise ValueError(f"give the device id once, got {type!r} and id {id!r}")
            d = as_device((type, id))
        if self.initialised:  # checked after as_device, which may run Python code
            raise _initialised_again(self)
        self.value = d.value
        self.initialised = True

    @property
    def type(self):
        """The DLPack device type, as a DeviceType."""
        return DeviceType(_made_device(self).value.type)

    @property
    def id(self):
        return _made_device(self).value.id

    @property
    def name(self):
        """The device type's name: ``"cpu"``, ``"cuda"``, ``"cuda_host"``, ..."""
        return _view_str(cpp.name(_made_device(self).value.type))

    def __eq__(self, other):
        if not self.initialised or (isinstance(other, Device) and not (<Device>other).initialised):
            return self is other  # one made by __new__ alone is no device: equal to itself only
        if isinstance(other, Device):
            return self.value == (<Device>other).value
        try:
            return self.value == as_device(other).value
        except (TypeError, ValueError):
            return NotImplemented

    def __hash__(self):
        if not self.initialised:
            return object.__hash__(self)
        return hash((self.value.type, self.value.id))

    def __repr__(self):
        return f"Device('{self}')" if self.initialised else f"<{type(self).__name__} holding no device>"

    def __str__(self):
        if not self.initialised:
            return repr(self)
        return f"{self.name}:{self.value.id}" if self.value.id or self.value.type != cpp.kDLCPU else "cpu"

    def __reduce__(self):
        return (Device, (str(_made_device(self)),))


cdef Device device_from_cpp(cpp.device d):
    cdef Device out = Device.__new__(Device)
    out.value = d
    out.initialised = True
    return out


cdef _init_devices():
    for t in DeviceType:
        _device_names[_view_str(cpp.name(<cpp.DLDeviceType><int>t.value))] = t
    _device_names["gpu"] = DeviceType.CUDA  # JAX's platform name


_init_devices()
cdef str _device_choices = ", ".join([n for n in _device_names if n != "gpu"])

cdef Device _cpu = device_from_cpp(cpp.device(cpp.kDLCPU, 0))


cpdef Device as_device(object spec):
    """The Device that ``spec`` names; TypeError or ValueError naming what was received."""
    if isinstance(spec, Device):
        return _made_device(<Device>spec)
    if type(spec) is str and spec == "cpu":
        return _cpu
    # Each part of the spec is read once, into exact strs, ints and tuples,
    # before it is checked: a subclass's methods may answer differently each time.
    if isinstance(spec, str):
        name, sep, index = str.__str__(spec).partition(":")
        if sep and not (index.isdigit() and index.isascii()):
            raise ValueError(f"device id in {spec!r} must be a non-negative integer")
        spec = (name, int(index) if sep else 0)
    elif isinstance(spec, tuple):
        spec = tuple(spec)
    elif type(spec).__module__ == "torch" and type(spec).__name__ == "device":
        spec = (spec.type, spec.index or 0)
    elif hasattr(spec, "platform") and hasattr(spec, "id"):  # a JAX device
        spec = (spec.platform, spec.id)
    else:
        raise TypeError(f"cannot interpret {spec!r} (of type {type(spec).__name__}) as a device")
    if len(spec) != 2:
        raise TypeError(f"a device tuple is (type, id), got {spec!r}")
    kind, index = spec
    if isinstance(kind, bool) or isinstance(index, bool):
        raise TypeError(f"a device is (type, id), got {spec!r}")
    if isinstance(kind, str):
        found = _device_names.get(str.__str__(kind))
        if found is None:
            raise ValueError(f"unknown device type {kind!r}; expected one of {_device_choices}")
        kind = found
    if isinstance(kind, int):
        kind = operator.index(kind)  # the int's own value: an int subclass may compare as it likes
    if isinstance(index, int):
        index = operator.index(index)
    if not isinstance(kind, int) or not 0 <= kind < 2**31 or not cpp.is_dlpack_device_type(kind):
        raise ValueError(f"device type {kind!r} is not a DLPack device type")
    if not isinstance(index, int) or not 0 <= index < 2**31:
        raise ValueError(f"device id must be an integer in [0, 2**31), got {index!r}")
    return device_from_cpp(cpp.device(<cpp.DLDeviceType><int>kind, <int>index))
