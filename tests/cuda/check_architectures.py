"""Checks the fatbinaries embedded in a CUDA static library or object: SASS
(ELF) for every architecture named, and PTX for the last one, and nothing else.
Usage: check_architectures.py LIBRARY "80;90". Needs no GPU and no cuobjdump."""
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2


def entries(data):
    """(kind, sm) for each entry of each fatbinary found in `data`."""
    found = []
    start = data.find(struct.pack("<I", FATBIN_MAGIC))
    while start != -1:
        _, version, header_size, fat_size = struct.unpack_from("<IHHQ", data, start)
        if version == 1 and header_size == 16 and start + 16 + fat_size <= len(data):
            pos, end = start + header_size, start + header_size + fat_size
            parsed = []
            while pos + 32 <= end:
                kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, pos)
                sm = struct.unpack_from("<I", data, pos + 28)[0]
                if kind not in (KIND_PTX, KIND_ELF) or entry_header < 32:
                    parsed = None
                    break
                parsed.append((kind, sm))
                pos += entry_header + payload
            if parsed is not None and pos == end:
                found += parsed
        start = data.find(struct.pack("<I", FATBIN_MAGIC), start + 4)
    return found


def main():
    library, archs = sys.argv[1], [a for a in sys.argv[2].split(";") if a]
    with open(library, "rb") as f:
        found = entries(f.read())
    if not archs:
        print("no gpu_arch configured: nvcc's default architecture, nothing to compare")
        return 0
    wanted_sass = {int(a.rstrip("af")) for a in archs}
    wanted_ptx = {int(archs[-1].rstrip("af"))}
    sass = {sm for kind, sm in found if kind == KIND_ELF}
    ptx = {sm for kind, sm in found if kind == KIND_PTX}
    print(f"{library}: SASS for {sorted(sass)}, PTX for {sorted(ptx)}; expected SASS {sorted(wanted_sass)}, "
          f"PTX {sorted(wanted_ptx)}")
    if sass != wanted_sass or ptx != wanted_ptx:
        print("architecture mismatch")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
