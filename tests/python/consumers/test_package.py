"""What the installed package ships: headers and .pxd files, never .pyx sources."""
import os
import pathlib
import subprocess

import dlbridge

PACKAGE = pathlib.Path(dlbridge.__file__).parent


def test_get_include_has_the_headers():
    include = pathlib.Path(dlbridge.get_include())
    for header in ("dlbridge.hpp", "dlpack.hpp", "dtype.hpp", "device.hpp", "layout.hpp", "shape.hpp", "plan.hpp",
                   "validate.hpp", "demands.hpp", "describe.hpp", "tensor.hpp", "dispatch.hpp", "small_float.hpp",
                   "element.hpp", "host_copy.hpp",
                   "stream.hpp", "version.hpp", "copy/walk.hpp", "copy/vectors.hpp", "copy/tiles.hpp",
                   "copy/threads.hpp", "copy/copies.hpp", "copy/casts.hpp"):
        assert (include / "dlbridge" / header).is_file(), header
    # Those that need Python.h, apart; the binding's private ones not at all.
    python = {p.name for p in (include / "dlbridge" / "python").iterdir()}
    assert python == {"core.hpp", "argument_api.hpp", "argument.hpp", "returns.hpp", "copy.hpp", "bindings.hpp",
                      "nanobind.hpp", "pybind11.hpp", "visit.hpp"}, python
    for private in ("backend.hpp", "build_info.hpp", "numpy_arrays.hpp", "python.hpp", "argument.hpp"):
        assert not (include / "dlbridge" / private).exists(), private
    version = (include / "dlbridge" / "version.hpp").read_text()
    assert f'"{dlbridge.__version__}"' in version


def test_pxd_shipped_and_pyx_not():
    shipped = {p.name for p in PACKAGE.iterdir()}
    assert {"__init__.pxd", "cpp.pxd", "_types.pxd", "_dlpack.pxd", "_array.pxd"} <= shipped
    assert not list(PACKAGE.rglob("*.pyx"))


def test_headers_compile_without_python(tmp_path):
    source = tmp_path / "use.cpp"
    source.write_text(
        "#include <dlbridge/dlbridge.hpp>\n"
        "#include <cstdio>\n"
        "int main() {\n"
        "  std::int64_t shape[] = {2, 3};\n"
        "  auto t = dlb::tensor::empty(shape, dlb::dtype_of<float>);\n"
        "  std::printf(\"%s %lld\\n\", dlb::version, (long long)t.size());\n"
        "}\n")
    exe = tmp_path / "use"
    cxx = os.environ.get("CXX", "c++")
    subprocess.run([cxx, "-std=c++20", "-I", dlbridge.get_include(), str(source), "-o", str(exe)], check=True)
    assert subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split() == \
        [dlbridge.__version__, "6"]
