"""Runs the CUDA doctest suite under compute-sanitizer (memcheck, racecheck or
synccheck), failing on any report. Without a usable GPU, or without
compute-sanitizer, it exits 77, which meson reports as a skip, and says why;
with DLBRIDGE_REQUIRE_GPU=1 (tests/gpu/run) it exits 1 instead, so that a GPU
run cannot pass having checked nothing.

The test cases of the doctest suite "not-under-compute-sanitizer" are left
out, and listed: each says where it is declared why the tool cannot run it as
meant (a deliberate allocation failure, which memcheck reports as an API
error; a control that needs two streams to race, which the tool serialises).

The suite runs whole, or in one of PARTS, each meant to fit one 10-minute
command under any of the tools (tests/gpu/run's stages memcheck-PART, ...):
the sweeps that launch the most kernels and the large tiled transposes
(shared memory: racecheck's slowest), each alone, and the rest. doctest
prints each test case's time (--duration), so that a part grown too slow
shows what to move.

usage: sanitize.py TOOL TEST_BINARY [PART]
       sanitize.py --parts      (lists the parts)"""
import os
import shutil
import subprocess
import sys

EXCLUDED_SUITE = "not-under-compute-sanitizer"
PRESENT = "[dlbridge] a CUDA device is present"
SWEEPS = {"permutations": "*copied and cast on the GPU*", "casts": "*every pair of dtypes on the GPU*",
          "transposes": "*large 2-D and batched transposes*"}
PARTS = {name: [f"--test-case={pattern}"] for name, pattern in SWEEPS.items()}
PARTS["rest"] = ["--test-case-exclude=" + ",".join(SWEEPS.values())]


def device_and_excluded(binary):
    """(None or why no device is usable, names of the excluded test cases), as
    the suite's own CUDA runtime sees it: a driver too old for the static
    runtime is no usable device, though the driver itself may list GPUs."""
    env = {k: v for k, v in os.environ.items() if k != "DLBRIDGE_REQUIRE_GPU"}
    listing = subprocess.run([binary, "--list-test-cases", "--no-skip", f"--test-suite={EXCLUDED_SUITE}"],
                             capture_output=True, text=True, env=env, timeout=120)
    lines = listing.stdout.splitlines()
    status = next((line for line in lines if line.startswith("[dlbridge] ")), None)
    if listing.returncode != 0 or status is None:
        sys.exit(f"{binary} --list-test-cases failed ({listing.returncode}): {listing.stdout}{listing.stderr}")
    missing = None if status.startswith(PRESENT) else status.split(": ", 1)[-1]
    rules = [i for i, line in enumerate(lines) if line.startswith("=====")]
    names = lines[rules[0] + 1:rules[1]] if len(rules) >= 2 else []
    return missing, names


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
        candidate = os.path.join(os.path.dirname(os.path.realpath(nvcc)), "compute-sanitizer")
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def not_run(why):
    if os.environ.get("DLBRIDGE_REQUIRE_GPU") == "1":
        print(f"failed: DLBRIDGE_REQUIRE_GPU=1, but {why}")
        return 1
    print(f"skipped: {why}")
    return 77


def main():
    if sys.argv[1:] == ["--parts"]:
        print(" ".join(PARTS))
        return 0
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] not in PARTS):
        sys.exit(f"usage: sanitize.py TOOL TEST_BINARY [PART], PART one of {', '.join(PARTS)}; got {sys.argv[1:]}")
    tool, binary = sys.argv[1], sys.argv[2]
    part = PARTS[sys.argv[3]] if len(sys.argv) == 4 else []
    missing, excluded = device_and_excluded(binary)
    if missing is not None:
        return not_run(missing)
    program = sanitizer()
    if program is None:
        return not_run("compute-sanitizer is not installed")
    command = [program, "--tool", tool, "--error-exitcode", "1"]
    if tool == "memcheck":
        command += ["--leak-check", "full"]
    command += [binary, f"--test-suite-exclude={EXCLUDED_SUITE}", "--duration=true", *part]
    print(f"not run under compute-sanitizer (doctest suite {EXCLUDED_SUITE}; the reasons are in the sources):")
    for name in excluded:
        print(f"  {name}")
    print(" ".join(command), flush=True)
    return subprocess.run(command).returncode


if __name__ == "__main__":
    sys.exit(main())
