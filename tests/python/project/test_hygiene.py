"""Import hygiene and build_info: dlbridge imports no array library, and a
build without CUDA (or a machine without a GPU) works the same on CPU."""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

import dlbridge

ARRAY_LIBRARIES = ("numpy", "torch", "jax", "jaxlib", "ml_dtypes", "cupy")


def run_child(code, **env_overrides):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p])
    env.update(env_overrides)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, f"child exited with {proc.returncode}: {proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_pulls_in_no_array_library():
    loaded = run_child(f"""
        import json, sys
        import dlbridge
        print(json.dumps([m for m in sys.modules if m.split(".")[0] in {ARRAY_LIBRARIES!r}]))
    """)
    assert loaded == []


def test_everyday_use_pulls_in_no_array_library():
    # Creating, viewing, printing and exchanging arrays (dlbridge with itself)
    # needs no array library either.
    result = run_child(f"""
        import json, sys
        import dlbridge
        a = dlbridge.asarray([[1.0, 2.0], [3.0, 4.0]])
        b = dlbridge.from_dlpack(a.T)
        z = dlbridge.zeros((2, 3), dtype="int32")
        f = dlbridge.full(3, True)
        e = dlbridge.empty(0)
        text = repr(b) + str(z) + repr(f) + repr(e)
        capsule = b.__dlpack__(max_version=(1, 3))
        del capsule
        c = dlbridge.from_dlpack(b, copy=True)
        info = dlbridge.build_info()
        dtypes = [dlbridge.DType(n).name for n in ("float32", "bfloat16", "float8_e4m3fn", "<f4", "int8")]
        print(json.dumps({{
            "loaded": [m for m in sys.modules if m.split(".")[0] in {ARRAY_LIBRARIES!r}],
            "values": c.tolist(),
            "dtypes": dtypes,
        }}))
    """)
    assert result["loaded"] == []
    assert result["values"] == [[1.0, 3.0], [2.0, 4.0]]
    assert result["dtypes"] == ["float32", "bfloat16", "float8_e4m3fn", "float32", "int8"]


def test_python_m_dlbridge_runs():
    # `python -m dlbridge` prints the build and tries the array libraries present.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([p for p in sys.path if p]))
    proc = subprocess.run([sys.executable, "-m", "dlbridge", "--help"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]


# -- build_info ------------------------------------------------------------------------


def check_build_info(info):
    for key in ("version", "dlpack_version", "compiler", "cpp_std", "cuda", "cuda_version", "gpu_count"):
        assert key in info, key
    assert isinstance(info["version"], str) and re.fullmatch(r"\d+\.\d+\.\d+\S*", info["version"])
    assert info["dlpack_version"] == "1.3"
    assert isinstance(info["compiler"], str) and info["compiler"]
    assert info["cpp_std"] == "c++20"
    assert type(info["cuda"]) is bool
    assert type(info["gpu_count"]) is int and info["gpu_count"] >= 0
    if info["cuda"]:
        assert isinstance(info["cuda_version"], str) and re.fullmatch(r"\d+\.\d+", info["cuda_version"])
    else:
        assert info["cuda_version"] is None
        assert info["gpu_count"] == 0


def test_build_info():
    info = dlbridge.build_info()
    check_build_info(info)
    assert info["version"] == dlbridge.__version__
    assert dlbridge.build_info() == info  # stable across calls
    json.dumps(info)  # plain data


def test_build_info_without_a_visible_gpu():
    # Hiding every GPU must leave a working build: gpu_count 0, CPU arrays fine.
    result = run_child("""
        import json
        import dlbridge
        info = dlbridge.build_info()
        a = dlbridge.from_dlpack(dlbridge.asarray([1, 2, 3]))
        print(json.dumps({"info": info, "values": a.tolist(), "device": str(a.device)}))
    """, CUDA_VISIBLE_DEVICES="", HIP_VISIBLE_DEVICES="")
    check_build_info(result["info"])
    assert result["info"]["gpu_count"] == 0
    assert result["values"] == [1, 2, 3]


def test_cpu_work_is_independent_of_cuda_availability():
    info = dlbridge.build_info()
    a = dlbridge.full((2, 2), 1.5)
    assert a.device == dlbridge.Device("cpu")
    assert dlbridge.from_dlpack(a, device="cpu").tolist() == [[1.5, 1.5], [1.5, 1.5]]
    assert a.__dlpack_device__() == (1, 0)
    if not info["cuda"] or info["gpu_count"] == 0:
        # Asking for a GPU then fails cleanly, never crashes.
        with pytest.raises(RuntimeError, match="no CUDA device is available"):
            dlbridge.zeros(3, device="cuda")
        with pytest.raises(RuntimeError, match="no CUDA device is available"):
            dlbridge.from_dlpack(a, device="cuda")
        with pytest.raises(BufferError, match=r"^cannot export an array on cpu to device \(2, 0\): "
                                              r"no CUDA device is available \("):
            a.__dlpack__(max_version=(1, 3), dl_device=(2, 0))
