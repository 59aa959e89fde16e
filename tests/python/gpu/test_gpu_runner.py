"""tests/gpu/run before it runs anything: its stages are checked, and what
the stages asked for lack (doctest, meson, Cython, the Python test tools, a
build) is said in one message, with how to provide it, before any stage
runs. The runner runs from a copy of itself (and of sanitize.py, which names
the sanitizer parts) in a folder of its own, under an interpreter with the
standard library alone, with a fake nvidia-smi and only the tools it needs on
PATH, so these run on any machine."""
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pip
import pytest

from paths import ROOT

TOOLS = ["bash", "sed", "head", "tr", "grep", "cat", "mkdir", "dirname", "rm", "tee", "find", "timeout", "ls", "wc",
         "du", "cut", "env", "sort"]


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """An interpreter with the standard library and pip alone (pip copied in:
    ensurepip is not everywhere)."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True,
                   timeout=300)
    python = venv / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], check=True,
                          capture_output=True, text=True).stdout.strip()
    package = pathlib.Path(pip.__file__).parent
    for path in [package, *package.parent.glob(f"pip-{pip.__version__}.dist-info")]:
        shutil.copytree(path, pathlib.Path(site) / path.name)
    return python


@pytest.fixture
def runner(tmp_path, bare_python):
    repo = tmp_path / "repo"
    for path in ("tests/gpu/run", "tests/cuda/sanitize.py"):
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, repo / path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        os.symlink(shutil.which(tool), bin_dir / tool)
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA H200, 9.0'\n")
    smi.chmod(0o755)

    def run(*stages, **env):
        # CXX=false: a compiler that finds no doctest header; no CUDA_HOME,
        # though /usr/local/cuda, where it exists, lends nvcc.
        environment = {"PATH": str(bin_dir), "HOME": str(tmp_path), "PYTHON": str(bare_python), "CXX": "false",
                       "PIP_CONFIG_FILE": os.devnull,
                       "RESULTS": str(tmp_path / "results"), **env}
        result = subprocess.run(["bash", str(repo / "tests" / "gpu" / "run"), *stages], capture_output=True,
                                text=True, env=environment, timeout=300)
        return result.returncode, result.stdout + result.stderr

    run.repo = repo
    run.results = tmp_path / "results"
    return run


def test_unknown_stages_are_refused_naming_every_stage(runner):
    code, out = runner("info", "memchek")
    assert code == 2, out
    assert out.startswith("unknown stage 'memchek'; the stages are: info build cpp python interop kit bench "
                          "sanitize (or one tool: memcheck memcheck-permutations memcheck-casts memcheck-transposes "
                          "memcheck-rest racecheck racecheck-permutations"), out
    assert "or prepare, alone" in out
    code, out = runner("prepare", "build")
    assert code == 2 and out.startswith("unknown stage 'prepare'"), out


def test_everything_the_build_lacks_is_said_at_once_before_any_stage_runs(runner):
    code, out = runner("build", "python", "interop")
    assert code == 1, out
    assert out.startswith("tests/gpu/run: nothing was run; the stages asked for (build python interop) need:"), out
    for lacking in ["  - meson (build, cpp): pip install meson for ",
                    "  - ninja (build): ",
                    "  - cython (build): pip install Cython for ",
                    "  - doctest/doctest.h (build): put it in .gpu/include/doctest/doctest.h (or a folder named by "
                    "DOCTEST_INCLUDE); `bash tests/gpu/run prepare` copies it there from a machine that has it "
                    "(Debian: doctest-dev installs /usr/include/doctest/doctest.h)",
                    "  - Python modules pytest hypothesis array_api_strict ml_dtypes (python, interop): `bash "
                    "tests/gpu/run prepare` puts the wheels of pytest pluggy iniconfig packaging pygments hypothesis "
                    "sortedcontainers array-api-strict ml_dtypes in .gpu/wheels"]:
        assert lacking in out
    assert "a build in build/gpu" not in out  # the build stage makes it
    assert out.rstrip().endswith("name it in the device tool's carry.")
    assert not runner.results.exists() or not any(runner.results.iterdir())  # no stage ran


def test_a_stage_after_the_build_needs_one(runner):
    code, out = runner("python")
    assert code == 1, out
    assert "  - a build in build/gpu (every stage but info): run the build stage first" in out
    assert "  - Python modules pytest (python, interop)" in out
    assert "doctest" not in out and "meson" not in out  # only the build stage needs them


def test_a_doctest_folder_without_the_header_is_named(runner, tmp_path):
    code, out = runner("build", DOCTEST_INCLUDE=str(tmp_path))
    assert code == 1, out
    assert f"  - doctest/doctest.h (build): DOCTEST_INCLUDE={tmp_path} holds none" in out


def test_a_doctest_header_in_the_carried_folder_is_found(runner, tmp_path):
    header = runner.repo / ".gpu" / "include" / "doctest" / "doctest.h"
    header.parent.mkdir(parents=True)
    header.write_text("// doctest\n")
    compiler = tmp_path / "bin" / "c++"  # answers -H as GCC does: the headers it includes
    compiler.write_text('#!/bin/bash\nfor a; do case $a in -I*) echo ". ${a#-I}/doctest/doctest.h" >&2;; esac; done\n')
    compiler.chmod(0o755)
    code, out = runner("build", CXX=str(compiler))
    assert code == 1, out
    assert "doctest" not in out.split("need:", 1)[1].split("Files for")[0], out


def _wheel(folder, distribution, module):
    """A wheel of `module`, an empty package, as the distribution `distribution` 0.1."""
    path = folder / f"{distribution}-0.1-py3-none-any.whl"
    info = f"{distribution}-0.1.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{module}/__init__.py", "")
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.1\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")
    return path


def test_carried_wheels_of_missing_modules_are_installed_apart(runner):
    wheels = runner.repo / ".gpu" / "wheels"
    wheels.mkdir(parents=True)
    _wheel(wheels, "array_api_strict", "array_api_strict")
    _wheel(wheels, "pip", "pip_impostor")  # installed already: never installed again
    code, out = runner("interop")
    assert code == 1, out
    assert f"installing into {runner.repo}/build/gpu-site: array_api_strict-0.1-py3-none-any.whl\n" in out, out
    assert (runner.repo / "build" / "gpu-site" / "array_api_strict" / "__init__.py").exists()
    assert not (runner.repo / "build" / "gpu-site" / "pip_impostor").exists()
    assert "  - Python modules pytest hypothesis ml_dtypes (python, interop)" in out
    # The next run finds it there, and installs nothing.
    code, out = runner("interop")
    assert "installing" not in out and "  - Python modules pytest hypothesis ml_dtypes (python, interop)" in out, out


def test_the_sanitizer_parts_cover_the_suite_once():
    sys.path.insert(0, str(ROOT / "tests" / "cuda"))
    try:
        import sanitize
    finally:
        sys.path.pop(0)
    assert list(sanitize.PARTS) == ["permutations", "casts", "transposes", "rest"]
    patterns = [args[0].split("=", 1)[1] for name, args in sanitize.PARTS.items() if name != "rest"]
    assert sanitize.PARTS["rest"] == ["--test-case-exclude=" + ",".join(patterns)]
    # Each sweep's pattern names exactly one GPU test case of the suite.
    cases = (ROOT / "tests" / "cuda" / "test_gpu.cpp").read_text()
    for pattern in patterns:
        assert sum(1 for line in cases.splitlines()
                   if line.startswith("GPU_TEST_CASE(") and pattern.strip("*") in line) == 1, pattern
