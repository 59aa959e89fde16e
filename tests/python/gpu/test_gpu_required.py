"""DLBRIDGE_REQUIRE_GPU=1 turns every skip for want of a usable GPU into a
failure naming the reason, in the Python GPU suite and benchmarks/gpu.py, and
tests/gpu/run fails where it finds no GPU; without the variable the suites
skip cleanly. (tests/cuda/require_gpu.py checks the doctest suite and
sanitize.py.) Only a machine without a usable GPU can take these paths."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from gpu import INFO, NO_GPU_REASON, needs_no_gpu
from paths import ROOT

pytestmark = [pytest.mark.no_sanitized_code,  # the GPU suites' skips: asan-python deselects it (conftest.py)
              pytest.mark.any_python,  # the GPU suites' skips: the same on every Python (conftest.py)
              needs_no_gpu]


def run(command, require, **env_overrides):
    env = {k: v for k, v in os.environ.items() if k != "DLBRIDGE_REQUIRE_GPU"}
    # This interpreter, whose sys.path the children get (tests/gpu/run's python3 may be another Python).
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p])
    env["PYTHON"] = sys.executable
    if require:
        env["DLBRIDGE_REQUIRE_GPU"] = "1"
    env.update(env_overrides)
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    return result.returncode, result.stdout + result.stderr


@pytest.mark.needs_torch  # the GPU suite's files import it
def test_the_python_gpu_suite_skips_and_fails_under_require_gpu():
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
               str(ROOT / "tests" / "python" / "gpu" / "test_cuda_gpu.py")]
    code, out = run(command, require=False)
    skipped = re.search(r"^(\d+) skipped in ", out, re.M)
    assert code == 0 and skipped, out
    assert out.count(f": {NO_GPU_REASON}") == len(re.findall(r"^SKIPPED \[\d+\]", out, re.M)), out
    code, out = run(command, require=True)
    errors = re.search(r"^(\d+) errors in ", out, re.M)
    assert code == 1 and errors and errors.group(1) == skipped.group(1), out
    # Each error's report is the reason, alone on its line.
    reasons = re.findall(rf"^DLBRIDGE_REQUIRE_GPU=1, but {re.escape(NO_GPU_REASON)}$", out, re.M)
    assert len(reasons) == int(errors.group(1)), out


def test_the_gpu_benchmarks_skip_and_fail_under_require_gpu():
    command = [sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--quick"]
    code, out = run(command, require=False)
    assert code == 0 and out.count("| skipped |") == 10, out
    code, out = run(command, require=True)
    assert code == 1, out
    assert f"benchmarks/gpu.py: DLBRIDGE_REQUIRE_GPU=1, but no usable GPU ({INFO['cuda_status']})" in out, out


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None,
                    reason="nvidia-smi is installed here: the runner would look further before failing")
def test_the_gpu_runner_fails_without_a_gpu(tmp_path):
    code, out = run(["bash", str(ROOT / "tests" / "gpu" / "run")], require=False, RESULTS=str(tmp_path))
    assert code == 1, out
    assert out.startswith("no usable GPU: nvidia-smi is missing or lists no GPU"), out
