"""C++ consumers of the installed package (docs/cpp-guide.md).

The example in tests/downstream/cpp is built against the installed dlbridge,
never the source tree: with Meson's dependency('dlbridge') found through the
shipped pkg-config file, with CMake's find_package(dlbridge CONFIG) through
the shipped package config, with a plain compiler command (flags from pkg-config
or from `python -m dlbridge --cflags`), and, where clang >= 17 is installed,
with `import dlbridge;` from a BMI of the shipped dlbridge.cppm (compiler
commands, and Meson: tests/downstream/cpp/import). Each program must print
expected_output.txt and must not link libpython. docs/cpp-guide.md quotes the
output and both meson.build files; a test keeps them in step.
"""
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import pytest

import dlbridge
from consumers import clang_with_modules
from paths import DOCS, DOWNSTREAM

EXAMPLE = DOWNSTREAM / "cpp"
EXPECTED = (EXAMPLE / "expected_output.txt").read_text()
CXX = os.environ.get("CXX", "c++")

# A source tree (an editable install, or the build folder on PYTHONPATH) has no
# headers beside the package: these tests need `pip install .` first. (An
# installed wheel with headers but no dlbridge.pc fails, as it should.)
pytestmark = [
    pytest.mark.no_sanitized_code,  # programs built without the sanitizers: asan-python deselects it
    pytest.mark.any_python,  # C++ programs: the same on every Python (conftest.py)
    pytest.mark.skipif(not os.path.isdir(dlbridge.get_include()),
                       reason=f"dlbridge at {pathlib.Path(dlbridge.__file__).parent} is not an installed wheel (no "
                              f"{dlbridge.get_include()}); the C++ example builds against an installed dlbridge: "
                              "pip install ."),
]


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{shlex.join(map(str, cmd))}\n{result.stdout}{result.stderr}"
    return result.stdout


def pkg_config_env():
    """The environment with dlbridge.get_pkgconfig_dir() first on PKG_CONFIG_PATH."""
    env = dict(os.environ)
    env["PKG_CONFIG_PATH"] = os.pathsep.join(
        p for p in (dlbridge.get_pkgconfig_dir(), os.environ.get("PKG_CONFIG_PATH")) if p)
    return env


def pkg_config(*args):
    return run(["pkg-config", *args, "dlbridge"], env=pkg_config_env()).strip()


def include_dirs(flags):
    return [os.path.realpath(flag[2:]) for flag in shlex.split(flags) if flag.startswith("-I")]


def needed_libraries(program):
    dynamic = run(["readelf", "-d", str(program)])
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)


def check_program(program):
    """The example prints what the guide says and needs no libpython."""
    libraries = needed_libraries(program)
    assert libraries, "readelf found no NEEDED entries"
    assert not [lib for lib in libraries if lib.startswith("libpython")], libraries
    assert run([str(program)]) == EXPECTED


def test_get_pkgconfig_dir_holds_dlbridge_pc():
    folder = pathlib.Path(dlbridge.get_pkgconfig_dir())
    assert folder.is_dir()
    assert (folder / "dlbridge.pc").is_file()
    assert folder == pathlib.Path(dlbridge.__file__).parent  # beside include/: paths without ".."
    assert "get_pkgconfig_dir" in dlbridge.__all__


def test_pkg_config_describes_the_installed_headers():
    assert pkg_config("--modversion") == dlbridge.__version__
    cflags = pkg_config("--cflags")
    # The headers only, and no -std: the standard (C++20 or newer) is the consumer's choice.
    assert include_dirs(cflags) == [os.path.realpath(dlbridge.get_include())]
    assert not re.search(r"(^|\s)-std=", cflags)
    assert pkg_config("--libs") == ""  # header-only
    assert pkg_config("--variable=cxx_std") == "c++20"
    module = pathlib.Path(pkg_config("--variable=module_interface"))
    assert module.is_file() and module.name == "dlbridge.cppm"
    assert module.resolve() == (pathlib.Path(dlbridge.get_include()) / "dlbridge.cppm").resolve()
    assert "export module dlbridge;" in module.read_text()


def test_pkg_config_file_is_relocatable(tmp_path):
    # A copy of the package's C++ files elsewhere is found there: every path
    # in dlbridge.pc is relative to the file itself.
    package = pathlib.Path(dlbridge.__file__).parent
    shutil.copytree(package / "include", tmp_path / "moved" / "include")
    shutil.copy(package / "dlbridge.pc", tmp_path / "moved")
    env = dict(os.environ, PKG_CONFIG_PATH=str(tmp_path / "moved"))
    cflags = run(["pkg-config", "--cflags", "dlbridge"], env=env)
    assert cflags.split() == [f"-I{tmp_path / 'moved' / 'include'}"]  # normalised: no ".."


def test_cli_prints_cflags_and_pkgconfigdir():
    cflags = run([sys.executable, "-m", "dlbridge", "--cflags"])
    assert cflags == f"-I{dlbridge.get_include()}\n"
    assert cflags.split() == pkg_config("--cflags").split()  # the same path, spelled the same
    assert run([sys.executable, "-m", "dlbridge", "--pkgconfigdir"]) == dlbridge.get_pkgconfig_dir() + "\n"
    assert run([sys.executable, "-m", "dlbridge", "--cmakedir"]) == dlbridge.get_cmake_dir() + "\n"


def test_meson_dependency_through_pkg_config(tmp_path):
    build = tmp_path / "build"
    env = pkg_config_env()
    setup = run(["meson", "setup", str(build), str(EXAMPLE)], env=env)
    assert re.search(r"Run-time dependency dlbridge found: YES " + re.escape(dlbridge.__version__), setup), setup
    run(["meson", "compile", "-C", str(build)], env=env)
    check_program(build / "example")


def cmake():
    """The cmake of the cmake package from PyPI (tests/requirements.txt), or one on PATH."""
    try:
        import cmake as package
    except ImportError:
        return shutil.which("cmake") or pytest.skip("needs cmake: pip install cmake (tests/requirements.txt)")
    return os.path.join(package.CMAKE_BIN_DIR, "cmake")


def test_cmake_find_package(tmp_path):
    # The example's CMakeLists.txt: find_package(dlbridge 0.1 CONFIG REQUIRED)
    # and dlbridge::dlbridge, which brings the headers and C++20 (the project
    # sets no standard of its own).
    build = tmp_path / "build"
    configure = run([cmake(), "-S", str(EXAMPLE), "-B", str(build), f"-Ddlbridge_DIR={dlbridge.get_cmake_dir()}",
                     f"-DCMAKE_CXX_COMPILER={shutil.which(CXX)}"])
    assert "CMake Warning" not in configure, configure
    run([cmake(), "--build", str(build), "--verbose"])
    check_program(build / "example")
    flags = (build / "CMakeFiles" / "example.dir" / "flags.make").read_text()
    assert re.search(r"-std=(gnu|c)\+\+20", flags), flags
    assert f"-isystem {dlbridge.get_include()}" in flags or f"-I{dlbridge.get_include()}" in flags, flags


@pytest.mark.parametrize("wanted, found", [("0.1", True), (dlbridge.__version__, True), ("0.0", False),
                                           ("0.2", False), ("1.0", False), ("0.1.0...<0.2", True)])
def test_cmake_version_check(tmp_path, wanted, found):
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(v NONE)\n"
        f"find_package(dlbridge {wanted} CONFIG)\nmessage(STATUS \"found=${{dlbridge_FOUND}} ${{dlbridge_VERSION}}\")\n")
    out = run([cmake(), "-S", str(tmp_path), "-B", str(tmp_path / "build"), f"-Ddlbridge_DIR={dlbridge.get_cmake_dir()}"])
    assert (f"found=1 {dlbridge.__version__}" if found else "found=0") in out, out


def test_cmake_config_is_relocatable(tmp_path):
    package = pathlib.Path(dlbridge.__file__).parent
    for part in ("include", "lib"):
        shutil.copytree(package / part, tmp_path / "moved" / part)
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(m NONE)\nfind_package(dlbridge CONFIG REQUIRED)\n"
        "get_target_property(dirs dlbridge::dlbridge INTERFACE_INCLUDE_DIRECTORIES)\n"
        "message(STATUS \"dirs=${dirs};module=${dlbridge_MODULE_INTERFACE}\")\n")
    moved = os.path.realpath(tmp_path / "moved")
    out = run([cmake(), "-S", str(tmp_path), "-B", str(tmp_path / "build"),
               f"-DCMAKE_PREFIX_PATH={tmp_path / 'moved'}"])  # <prefix>/lib/cmake/dlbridge is searched
    assert f"dirs={moved}/include;module={moved}/include/dlbridge.cppm" in out, out


@pytest.mark.parametrize("flags_from", ["pkg-config", "python -m dlbridge --cflags"])
def test_plain_compiler_command(tmp_path, flags_from):
    if flags_from == "pkg-config":
        flags = pkg_config("--cflags")
    else:
        flags = run([sys.executable, "-m", "dlbridge", "--cflags"])
    program = tmp_path / "example"
    run([CXX, "-std=c++20", *shlex.split(flags), str(EXAMPLE / "main.cpp"), "-o", str(program)])
    check_program(program)


# What strict projects build with, -Werror included: dlbridge's headers are
# included with -I (as --cflags gives them), so any warning in them is the
# author's. (clang's -Wconversion holds -Wsign-conversion; GCC's does not.)
STRICT_WARNINGS = ["-Wall", "-Wextra", "-Wconversion", "-Wsign-conversion", "-Wshadow", "-Wpedantic", "-Werror"]


@pytest.mark.parametrize("compiler", ["c++", "clang++"])
def test_example_compiles_without_warnings(compiler):
    if compiler == "clang++":
        compiler = clang_with_modules() or pytest.skip("needs clang >= 17 (tests/run installs clang-19)")
    flags = shlex.split(run([sys.executable, "-m", "dlbridge", "--cflags"]))
    run([compiler, "-std=c++20", "-O2", *STRICT_WARNINGS, *flags, "-c", str(EXAMPLE / "main.cpp"), "-o", os.devnull])


@pytest.mark.skipif(clang_with_modules() is None, reason="needs clang >= 17 (tests/run installs clang-19)")
def test_import_dlbridge_with_compiler_commands(tmp_path):
    # The guide's commands: a BMI and initializer object from the shipped
    # dlbridge.cppm, then main.cpp with `import dlbridge;` instead of the include.
    clang = clang_with_modules()
    flags = ["-std=c++20", *shlex.split(pkg_config("--cflags"))]
    bmi, initializer, program = tmp_path / "dlbridge.pcm", tmp_path / "dlbridge.o", tmp_path / "example"
    run([clang, *flags, "-x", "c++-module", pkg_config("--variable=module_interface"),
         f"-fmodule-output={bmi}", "-c", "-o", str(initializer)])
    run([clang, *flags, "-DUSE_DLBRIDGE_MODULE", f"-fmodule-file=dlbridge={bmi}",
         str(EXAMPLE / "main.cpp"), str(initializer), "-o", str(program)])
    check_program(program)


@pytest.mark.skipif(clang_with_modules() is None, reason="needs clang >= 17 (tests/run installs clang-19)")
def test_import_dlbridge_with_meson(tmp_path):
    # tests/downstream/cpp/import/meson.build: the BMI built by a custom_target.
    build = tmp_path / "build"
    env = dict(pkg_config_env(), CXX=clang_with_modules())
    run(["meson", "setup", str(build), str(EXAMPLE / "import")], env=env)
    run(["meson", "compile", "-C", str(build)], env=env)
    check_program(build / "example")


def test_cpp_guide_quotes_the_example():
    # docs/cpp-guide.md quotes the example's output and meson.build: keep them in step.
    guide = (DOCS / "cpp-guide.md").read_text()
    for line in EXPECTED.splitlines():
        assert line in guide, f"docs/cpp-guide.md does not quote the example's output line {line!r}"
    for meson_build in (EXAMPLE / "meson.build", EXAMPLE / "import" / "meson.build"):
        lines = meson_build.read_text().splitlines()
        while lines and lines[0].startswith("#"):  # the guide explains what the header comment says
            lines.pop(0)
        assert "\n".join(lines).strip() in guide, f"docs/cpp-guide.md does not quote {meson_build}"
    cmake_lists = [line for line in (EXAMPLE / "CMakeLists.txt").read_text().splitlines() if not line.startswith("#")]
    assert "\n".join(cmake_lists).strip() in guide, "docs/cpp-guide.md does not quote CMakeLists.txt"


# -- The CUDA backend (tests/downstream/cuda): dlbridge_cuda and its headers ---------

BACKEND_EXAMPLE = DOWNSTREAM / "cuda"


def backend_output():
    """What the backend example prints here: with the backend, and a usable
    GPU or the reason there is none (build_info() asks the same library)."""
    info = dlbridge.build_info()
    lines = [f"backend built: {'yes' if info['cuda'] else 'no'}; on the CPU: 6 elements"]
    if info["gpu_count"]:
        lines.append("on cuda:0: 6 elements")
    else:
        lines.append(f"no GPU work: no CUDA device is available ({info['cuda_status']})")
    return "\n".join(lines) + "\n"


def cuda_runtime_flags():
    """The CUDA runtime the backend links (from the toolkit of the nvcc on
    PATH), or none where dlbridge was built without the backend."""
    if not dlbridge.build_info()["cuda"]:
        return []
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("dlbridge was built with the CUDA backend, whose runtime a program links from the CUDA "
                    "toolkit: put its nvcc on PATH")
    # The toolkit's libraries as nvcc itself reports them (nvcc may be a wrapper script).
    dryrun = subprocess.run([nvcc, "-dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull],
                            capture_output=True, text=True).stderr
    folders = re.findall(r'-L"?([^"\s]+)', "\n".join(line for line in dryrun.splitlines() if "LIBRARIES=" in line))
    libdir = next((d for d in folders if os.path.isfile(os.path.join(d, "libcudart_static.a"))), None)
    assert libdir is not None, f"no libcudart_static.a where {nvcc} links from: {folders}"
    return [f"-L{libdir}", "-lcudart_static", "-ldl", "-lrt", "-lpthread"]


def test_the_backend_is_installed_for_cpp():
    package = pathlib.Path(dlbridge.__file__).parent
    headers = {p.name for p in (package / "include" / "dlbridge" / "cuda").iterdir() if p.suffix == ".hpp"}
    assert {"all.hpp", "arrays.hpp", "runtime.hpp", "error.hpp", "stream.hpp", "memory.hpp", "copy.hpp"} <= headers
    assert (package / "lib" / "libdlbridge_cuda.a").is_file()
    env = pkg_config_env()
    assert run(["pkg-config", "--modversion", "dlbridge-cuda"], env=env).strip() == dlbridge.__version__
    backend = run(["pkg-config", "--variable=backend", "dlbridge-cuda"], env=env).strip()
    assert backend == ("true" if dlbridge.build_info()["cuda"] else "false")
    if backend == "true":
        cuda_version = run(["pkg-config", "--variable=cuda_version", "dlbridge-cuda"], env=env).strip()
        assert cuda_version.startswith(dlbridge.build_info()["cuda_version"]), cuda_version


def test_the_backend_links_through_pkg_config(tmp_path):
    flags = run(["pkg-config", "--cflags", "--libs", "dlbridge-cuda"], env=pkg_config_env())
    program = tmp_path / "backend"
    run([CXX, "-std=c++20", str(BACKEND_EXAMPLE / "main.cpp"), *shlex.split(flags), *cuda_runtime_flags(),
         "-o", str(program)])
    assert not [lib for lib in needed_libraries(program) if lib.startswith("libpython")]
    assert run([str(program)]) == backend_output()


def test_the_backend_links_through_cmake(tmp_path):
    cuda_runtime_flags()  # skips where the toolkit is not on PATH, which CMake's FindCUDAToolkit needs too
    build = tmp_path / "build"
    run([cmake(), "-S", str(BACKEND_EXAMPLE), "-B", str(build), f"-Ddlbridge_DIR={dlbridge.get_cmake_dir()}",
         f"-DCMAKE_CXX_COMPILER={shutil.which(CXX)}"])
    run([cmake(), "--build", str(build)])
    assert run([str(build / "backend_example")]) == backend_output()
