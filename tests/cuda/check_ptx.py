"""Checks the global memory accesses of the cast kernels in the PTX of
kernels.cu. Where every address is aligned (cast_kernel<true>,
cast_to_packed_kernel<true>) elements are read, and written where not packed,
with accesses of 16, 32 and 64 bits, not byte by byte; the fallback for
unaligned addresses (<false>) reads and writes single bytes only, since a wider
access to an unaligned address faults.
Usage: check_ptx.py KERNELS.ptx. Needs no GPU."""
import collections
import re
import sys

ENTRY = re.compile(r"^\.(?:visible\s+)?entry\s+(\S+)\((.*?)^\}", re.S | re.M)
# ld.global.u16, st.global.v2.u64, ld.global.nc.f32 ...: (ld or st, bits).
ACCESS = re.compile(r"\b(ld|st)\.global(?:\.[\w:]+?)*?\.[bsuf](8|16|32|64)\b")
# The mangled names (template <bool Aligned>): the length prefix keeps
# cast_kernel apart from cast_to_packed_kernel.
KERNELS = {
    "cast_kernel<true>": "11cast_kernelILb1E",
    "cast_kernel<false>": "11cast_kernelILb0E",
    "cast_to_packed_kernel<true>": "21cast_to_packed_kernelILb1E",
    "cast_to_packed_kernel<false>": "21cast_to_packed_kernelILb0E",
}
WORDS = {16, 32, 64}


def accesses(ptx):
    """{kernel: Counter of (ld or st, bits)} for the kernels in KERNELS."""
    found = {}
    for match in ENTRY.finditer(ptx):
        for kernel, mangled in KERNELS.items():
            if mangled in match.group(1):
                if kernel in found:
                    raise SystemExit(f"{kernel} appears twice")
                found[kernel] = collections.Counter((op, int(bits)) for op, bits in ACCESS.findall(match.group(0)))
    return found


def main():
    with open(sys.argv[1]) as f:
        found = accesses(f.read())
    failures = [f"{kernel} not found (renamed?)" for kernel in KERNELS if kernel not in found]
    for kernel, counts in sorted(found.items()):
        print(f"{kernel}: " + ", ".join(f"{op}.{bits}: {n}" for (op, bits), n in sorted(counts.items())))
        loads = {bits for op, bits in counts if op == "ld"}
        stores = {bits for op, bits in counts if op == "st"}
        if kernel.endswith("<true>"):
            if not WORDS <= loads:
                failures.append(f"{kernel} has no global loads of {sorted(WORDS - loads)} bits")
            if kernel.startswith("cast_kernel") and not WORDS <= stores:
                failures.append(f"{kernel} has no global stores of {sorted(WORDS - stores)} bits")
        elif loads | stores != {8}:
            failures.append(f"{kernel} (unaligned addresses) accesses {sorted(loads | stores)} bits, not bytes only")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
