"""What the installed package ships: headers and .pxd files, never .pyx sources."""
import os
import pathlib
import subprocess
import sys

import dlbridge
from peers import numpy_from_dlpack_writable

PACKAGE = pathlib.Path(dlbridge.__file__).parent


def test_get_include_has_the_headers():
    include = pathlib.Path(dlbridge.get_include())
    for header in ("dlbridge.hpp", "dlpack.hpp", "dtype.hpp", "device.hpp", "layout.hpp",
                   "validate.hpp", "tensor.hpp", "element.hpp", "host_copy.hpp", "stream.hpp", "version.hpp"):
        assert (include / "dlbridge" / header).is_file(), header
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


def test_main_job_reports_zero_copy_with_installed_libraries():
    result = subprocess.run([sys.executable, "-m", "dlbridge", "--json"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    import json
    report = json.loads(result.stdout)
    assert report["build"]["dlpack_version"] == "1.3"
    exchanges = {e["library"]: e for e in report["exchanges"]}
    for library in ("numpy", "torch", "jax", "array_api_strict"):
        assert exchanges[library]["into_dlbridge"] == "zero-copy", exchanges[library]
        assert exchanges[library]["from_dlbridge"] == "zero-copy", exchanges[library]
    # What each makes of writable and read-only arrays, as the installed version does.
    for library in ("numpy", "array_api_strict"):
        numpy_keeps = numpy_from_dlpack_writable(True, 6)
        assert exchanges[library]["writable_arrives"] == ("writable" if numpy_keeps else "read-only")
        assert exchanges[library]["read_only_arrives"] == "read-only"
    assert exchanges["torch"]["writable_arrives"] == exchanges["torch"]["read_only_arrives"] == "writable"
    assert exchanges["jax"]["writable_arrives"] == "immutable"
    assert exchanges["jax"]["read_only_arrives"].startswith(
        "refused: BufferError: a read-only array cannot be exported as a legacy DLPack capsule")
    for library in ("numpy", "torch", "jax", "array_api_strict"):
        assert exchanges[library]["transposed_arrives"] == "same values", exchanges[library]


def test_main_job_catches_a_consumer_that_ignores_strides(monkeypatch, capsys):
    """What JAX 0.6.0 to 0.7.1 do with a column-major array (read its memory
    as row-major), done here with NumPy, is reported and fails the job; a
    consumer that refuses the layout is reported as refusing it."""
    import dlbridge.__main__ as job

    numpy = next(lib for lib in job.LIBRARIES if lib.name == "numpy")
    row_major = job.Library(**{**vars(numpy), "from_dlpack":
                               lambda np, a: np.from_dlpack(a).ravel(order="K").reshape(a.shape)})

    def refuse(np, a):
        if not np.from_dlpack(a).flags.c_contiguous:
            raise BufferError("row-major only")
        return np.from_dlpack(a)

    refusing = job.Library(**{**vars(numpy), "from_dlpack": refuse})
    assert job.check(numpy).transposed_arrives == "same values"
    assert job.check(row_major).transposed_arrives == "WRONG VALUES: the library ignored the strides"
    assert job.check(refusing).transposed_arrives == "refused: BufferError: row-major only"
    monkeypatch.setattr(job, "LIBRARIES", [refusing])
    assert job.main([]) == 0
    monkeypatch.setattr(job, "LIBRARIES", [row_major])
    assert job.main([]) == 1
    assert "WRONG VALUES" in capsys.readouterr().out
