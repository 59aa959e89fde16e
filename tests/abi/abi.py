"""The ABI that Cython and C++ consumers compile in, read from the installed dlbridge.

A consumer built against dlbridge 0.1.x must run with any other 0.1.x, so
within a minor series none of this may change (append-only parts may grow):

- Array's C struct (from _array.pxd): its size, its fields, where they lie;
- the functions `cimport` gives (dlbridge._array.__pyx_capi__) and their C
  signatures (new ones may be added);
- the argument API table (dlbridge/python/argument_api.hpp): its capsule name, ABI version
  and slots, in order and at their offsets (slots may be appended);
- the layout of what consumers' inline code reads and writes in objects
  dlbridge made: dlb::tensor, dlb::keeper, dlb::copy_state (the copy state
  the table points to), dlb::python::borrowed_array.

`python tests/abi/abi.py` prints the installed package's ABI as JSON; the
committed description of a series is tests/abi/<major>.<minor>.json, and
tests/python/consumers/test_abi.py fails, naming what changed, when they differ.
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile

import dlbridge
import dlbridge._array

# Compared as a whole: nothing in them may change within a series.
EXACT = ("Array", "tensor", "keeper", "copy_state", "borrowed_array")


def series(version: str) -> str:
    """'0.1' for 0.1.3: a minor series."""
    return ".".join(version.split(".")[:2])


def _struct_fields(header: str, struct: str) -> list[str]:
    """The member names of `struct` in a C++ header, in order."""
    body = re.search(r"\bstruct " + struct + r" \{(.*?)\n\};", header, re.S)
    assert body, f"no struct {struct} in the header"
    names = []
    for line in body.group(1).splitlines():
        line = line.split("//")[0].strip()
        pointer = re.match(r".*\(\*(\w+)\)\(", line)  # a function pointer: int (*borrow)(...)
        member = re.match(r"[\w:<>, *]+?[\s*](\w+)(\[\w+\])?(\{\w*\}| = [\w.]+)?;$", line)
        if pointer or member:
            names.append((pointer or member).group(1))
    return names


def _array_fields() -> list[str]:
    """The fields of `cdef class Array` in the shipped _array.pxd, as "type name"."""
    pxd = open(os.path.join(os.path.dirname(dlbridge.__file__), "_array.pxd")).read()
    body = re.search(r"^cdef class Array:\n(.*?)(?=^\S)", pxd, re.S | re.M)
    assert body, "no cdef class Array in _array.pxd"
    return [" ".join(m.groups()) for m in re.finditer(r"^\s+cdef ([\w.]+) (\w+)\s*$", body.group(1), re.M)]


PROBE = r"""
#include <Python.h>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dlbridge/python/argument_api.hpp>
#include <dlbridge/tensor.hpp>

// Where `bytes` lies in `object` (-1: nowhere, -2: more than once).
template <class T, class V>
long find(const T& object, const V& value, std::size_t bytes = sizeof(V)) {
  const auto* begin = reinterpret_cast<const unsigned char*>(&object);
  long found = -1;
  for (std::size_t at = 0; at + bytes <= sizeof(T); ++at)
    if (std::memcmp(begin + at, &value, bytes) == 0) found = found == -1 ? long(at) : -2;
  return found;
}

int main() {
  namespace py = dlb::python;
  // A tensor whose every field holds a value found nowhere else in it.
  const std::int64_t shape[] = {1001, 1003, 1005}, strides[] = {1003 * 1005, 1005, 1};
  const auto t = dlb::tensor::adopt(reinterpret_cast<void*>(std::uintptr_t(0x5eed0000)), dlb::dtype{dlb::kDLFloat, 32},
                                    dlb::device{dlb::kDLCUDA, 7}, shape, strides, true, nullptr, nullptr);
  const dlb::keeper* keeper = t.memory_keeper();
  const dlb::dtype type{dlb::kDLFloat, 32};
  const dlb::device device{dlb::kDLCUDA, 7};
  const struct { std::int32_t ndim; bool readonly; } flags{3, true};
  std::printf("{\"tensor\": {\"size\": %zu, \"align\": %zu, \"keeper\": %ld, \"data\": %ld, \"dtype\": %ld, "
              "\"device\": %ld, \"ndim, readonly\": %ld, \"shape\": %ld},\n",
              sizeof(dlb::tensor), alignof(dlb::tensor), find(t, keeper), find(t, t.data()), find(t, type),
              find(t, device), find(t, flags, sizeof(std::int32_t) + 1), find(t, shape));
  std::printf("\"keeper\": {\"size\": %zu, \"align\": %zu},\n", sizeof(dlb::keeper), alignof(dlb::keeper));
  std::printf("\"copy_state\": {\"size\": %zu, \"align\": %zu},\n", sizeof(dlb::copy_state),
              alignof(dlb::copy_state));
  std::printf("\"borrowed_array\": {\"size\": %zu, \"align\": %zu@BORROWED@},\n", sizeof(py::borrowed_array),
              alignof(py::borrowed_array));
  std::printf("\"argument_api\": {\"abi_version\": %u, \"size\": %zu, \"slots\": {@SLOTS@}}}\n",
              unsigned(py::argument_api_version), sizeof(py::argument_api));
}
"""


def _offsets(struct: str, names: list[str]) -> tuple[str, list[str]]:
    fmt = ", ".join(f'\\"{name}\\": %zu' for name in names)
    return fmt, [f"offsetof(py::{struct}, {name})" for name in names]


def _compiled() -> dict:
    """What a C++ compile against the installed headers sees."""
    header = open(os.path.join(dlbridge.get_include(), "dlbridge", "python", "argument_api.hpp")).read()
    slots, borrowed = _struct_fields(header, "argument_api"), _struct_fields(header, "borrowed_array")
    slots_fmt, slots_args = _offsets("argument_api", slots)
    borrowed_fmt, borrowed_args = _offsets("borrowed_array", borrowed)
    source = (PROBE.replace("@SLOTS@", slots_fmt).replace("@BORROWED@", ", " + borrowed_fmt)
              .replace("sizeof(py::argument_api));", "sizeof(py::argument_api), " + ", ".join(slots_args) + ");")
              .replace("alignof(py::borrowed_array));", "alignof(py::borrowed_array), " + ", ".join(borrowed_args)
                       + ");"))
    with tempfile.TemporaryDirectory() as folder:
        cpp, exe = os.path.join(folder, "probe.cpp"), os.path.join(folder, "probe")
        with open(cpp, "w") as f:
            f.write(source)
        compiler = os.environ.get("CXX", "c++")
        subprocess.run([compiler, "-std=c++20", "-w", f"-I{dlbridge.get_include()}",
                        f"-I{sysconfig.get_paths()['include']}", cpp, "-o", exe], check=True)
        found = json.loads(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)
    borrowed_offsets = {name: found["borrowed_array"].pop(name) for name in borrowed}
    found["borrowed_array"]["fields"] = borrowed_offsets
    return found


def _capsule(capsule: object) -> tuple[str, int]:
    """A capsule's name and pointer."""
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype, api.PyCapsule_GetName.argtypes = ctypes.c_char_p, [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    name = api.PyCapsule_GetName(capsule)
    return name.decode(), api.PyCapsule_GetPointer(capsule, name)


def built() -> dict:
    """The ABI of the installed dlbridge."""
    compiled = _compiled()
    Array = dlbridge.Array
    table_name, table = _capsule(dlbridge._array._argument_api)
    tensor_offset = ctypes.c_ssize_t.from_address(table + compiled["argument_api"]["slots"]["tensor_offset"]).value
    published = ctypes.c_uint32.from_address(table).value  # the first slot, in every version of the table
    assert published == compiled["argument_api"]["abi_version"], (published, compiled["argument_api"])
    return {
        "series": series(dlbridge.__version__),
        "Array": {"basicsize": Array.__basicsize__, "itemsize": Array.__itemsize__,
                  "weakrefoffset": Array.__weakrefoffset__, "tensor_offset": tensor_offset,
                  "fields": _array_fields()},
        "capi": {name: _capsule(capsule)[0] for name, capsule in sorted(dlbridge._array.__pyx_capi__.items())},
        "argument_api": {"capsule": table_name, **compiled.pop("argument_api")},
        **compiled,
    }


def differences(committed: dict, now: dict) -> list[str]:
    """What changed from the committed ABI in a way consumers built against it cannot survive."""
    changes = []
    for part in EXACT:
        for key in sorted(committed[part].keys() | now[part].keys()):
            was, is_ = committed[part].get(key), now[part].get(key)
            if was != is_:
                changes.append(f"{part}.{key}: was {was!r}, is {is_!r}")
    for name, signature in committed["capi"].items():
        if now["capi"].get(name) != signature:
            changes.append(f"cimported function {name}: was {signature!r}, is {now['capi'].get(name)!r}")
    was, is_ = committed["argument_api"], now["argument_api"]
    for key in ("capsule", "abi_version"):
        if was[key] != is_[key]:
            changes.append(f"argument_api.{key}: was {was[key]!r}, is {is_[key]!r}")
    # Slots are appended, never moved: the committed ones must lead, where they were.
    if list(is_["slots"].items())[:len(was["slots"])] != list(was["slots"].items()):
        changes.append(f"argument_api.slots: was {was['slots']!r}, is {is_['slots']!r} "
                       f"(slots may only be appended)")
    if is_["size"] < was["size"]:
        changes.append(f"argument_api.size: was {was['size']}, is {is_['size']} (it may only grow)")
    return changes


if __name__ == "__main__":
    json.dump(built(), sys.stdout, indent=1)
    print()
