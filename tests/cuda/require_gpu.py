"""DLBRIDGE_REQUIRE_GPU=1 turns every skip for want of a GPU into a failure
naming the reason: each GPU test case of the doctest suite fails, and
sanitize.py exits 1 instead of 77. Without it, both skip cleanly. Only a
machine without a usable GPU can take that path: on a GPU machine this exits
77, which meson reports as a skip.

usage: require_gpu.py TEST_BINARY SANITIZE_PY"""
import os
import re
import subprocess
import sys


def run(command, require):
    env = {k: v for k, v in os.environ.items() if k != "DLBRIDGE_REQUIRE_GPU"}
    if require:
        env["DLBRIDGE_REQUIRE_GPU"] = "1"
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    return result.returncode, result.stdout + result.stderr


def counts(output):
    """(passed, failed, skipped) test cases from doctest's summary."""
    found = re.search(r"test cases:\s*\d+ \|\s*(\d+) passed \|\s*(\d+) failed \|\s*(\d+) skipped", output)
    return tuple(int(n) for n in found.groups()) if found else None


def main():
    binary, sanitize = sys.argv[1], sys.argv[2]
    code, out = run([binary], require=False)
    first = next((line for line in out.splitlines() if line.startswith("[dlbridge] ")), "")
    if first.startswith("[dlbridge] a CUDA device is present"):
        print("skipped: a CUDA device is usable here, so the no-GPU path cannot be taken")
        return 77
    problems = []

    def check(ok, what, output):
        print(("ok: " if ok else "FAILED: ") + what)
        if not ok:
            problems.append(output)

    prefix = "[dlbridge] GPU test cases are skipped: "
    check(first.startswith(prefix), "without DLBRIDGE_REQUIRE_GPU the suite says why the GPU cases are skipped", out)
    reason = first[len(prefix):]
    plain = counts(out)
    check(code == 0 and plain is not None and plain[1] == 0 and plain[2] > 0,
          f"without it the suite passes with GPU cases skipped: {plain}", out)

    code, out = run([binary], require=True)
    required = counts(out)
    # Every GPU case is one that was skipped, and now fails naming the reason.
    check(code != 0 and required is not None and plain is not None and required[2] == 0
          and required[1] == plain[2] and required[0] == plain[0],
          f"with DLBRIDGE_REQUIRE_GPU=1 every GPU case fails: {required}", out)
    check(out.count(f"DLBRIDGE_REQUIRE_GPU=1, but {reason}") == (required or (0, 0, 0))[1] > 0,
          f"each failure names the reason: DLBRIDGE_REQUIRE_GPU=1, but {reason}", out)

    code, out = run([sys.executable, sanitize, "memcheck", binary], require=False)
    check(code == 77 and f"skipped: {reason}" in out, f"sanitize.py skips (77) without it: {code}", out)
    code, out = run([sys.executable, sanitize, "memcheck", binary], require=True)
    check(code == 1 and f"failed: DLBRIDGE_REQUIRE_GPU=1, but {reason}" in out,
          f"sanitize.py fails (1) with it: {code}", out)

    for output in problems:
        print("----\n" + output[-4000:])
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
