"""The Meson project configures cleanly with and without nvcc (option cuda=auto)."""
import os
import shutil
import subprocess

import pytest

from paths import ROOT

pytestmark = [pytest.mark.any_python,  # Meson's configuration: the same on every Python (conftest.py)
              pytest.mark.no_sanitized_code]  # the asan-python stage deselects it (conftest.py)



def configure(tmp_path, env):
    env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}  # nvcc crashes under a preloaded ASan runtime
    result = subprocess.run(["meson", "setup", str(tmp_path / "build"), "-Dtests=disabled"],
                            cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_configures_without_nvcc(tmp_path):
    hidden = {os.path.dirname(p) for p in (shutil.which("nvcc"),) if p}
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                           if d not in hidden and not os.path.exists(os.path.join(d, "nvcc")))
    env = {k: v for k, v in os.environ.items() if k not in ("NVCC", "CUDACXX", "CUDA_PATH")}
    env["PATH"] = path
    out = configure(tmp_path, env)
    assert "CUDA backend: false" in " ".join(out.split())


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (the CUDA toolkit) is not installed here")
def test_configures_with_nvcc(tmp_path):
    out = configure(tmp_path, dict(os.environ))
    assert "CUDA backend: true" in " ".join(out.split())
