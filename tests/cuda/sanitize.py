"""Runs the CUDA doctest suite under compute-sanitizer (memcheck or racecheck),
failing on any report. Without a usable GPU it exits 77, which meson reports
as a skip, and says why.

usage: sanitize.py TOOL TEST_BINARY"""
import ctypes
import os
import shutil
import subprocess
import sys


def gpu_count():
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return 0, f"no CUDA driver ({e})"
    count = ctypes.c_int(0)
    if driver.cuInit(0) != 0 or driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0, "the CUDA driver found no usable device"
    return count.value, ""


def sanitizer():
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        candidate = os.path.join(home or "", "bin", "compute-sanitizer")
        if home and os.access(candidate, os.X_OK):
            return candidate
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidate = os.path.join(os.path.dirname(nvcc), "compute-sanitizer")
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def main():
    tool, binary = sys.argv[1], sys.argv[2]
    count, why = gpu_count()
    if count == 0:
        print(f"skipped: {why}")
        return 77
    program = sanitizer()
    if program is None:
        print("skipped: compute-sanitizer is not installed")
        return 77
    command = [program, "--tool", tool, "--error-exitcode", "1"]
    if tool == "memcheck":
        command += ["--leak-check", "full"]
    print(" ".join(command + [binary]), flush=True)
    return subprocess.run(command + [binary]).returncode


if __name__ == "__main__":
    sys.exit(main())
