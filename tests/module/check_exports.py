"""Checks that lib/dlbridge.cppm exports every public name of the headers.

Usage: check_exports.py CPPM HEADER -- COMPILER [FLAGS...]

The compiler (clang) parses HEADER (dlbridge/dlbridge.hpp) and dumps every
declaration whose qualified name starts with dlb::. Public names are those
directly in namespace dlb or in one of its namespaces other than dlb::detail,
plus the enumerators of unscoped enums (kDLCPU, ...), which are namespace
members too. Each must appear in CPPM as `using dlb::NAME;`, and CPPM must
name nothing else. Exits 1 listing the differences.
"""
import re
import subprocess
import sys

PRIVATE_NAMESPACES = {"detail"}

# A direct child line of a dumped declaration: "|-Kind 0x... <range> ...".
CHILD = re.compile(r"^[|`]-(\w+) 0x[0-9a-f]+ ")
NAMED = re.compile(r"(?:\bstruct|\bclass|\bunion|\bnamespace)\s+(\w+)|(\w+) '")


def child_name(line: str) -> str | None:
    """The name a child declaration line declares, or None if implicit or unnamed."""
    if " implicit " in line:
        return None
    rest = line.split(">", 1)[1] if ">" in line else line  # drop the source range
    m = NAMED.search(rest)
    if m:
        return m.group(1) or m.group(2)
    words = rest.split()
    return words[-1] if words and words[-1].isidentifier() else None


def header_names(dump: str) -> set[str]:
    names: set[str] = set()
    parts = re.split(r"^Dumping (\S+):\n", dump, flags=re.M)
    for qualified, body in zip(parts[1::2], parts[2::2]):
        scope = qualified.split("::")
        if scope[0] != "dlb" or len(scope) != 2 or not scope[1].isidentifier():
            continue  # not a member of dlb itself (the dump also lists nested ones)
        name = scope[1]
        lines = body.splitlines()
        kind = lines[0].split()[0]
        if kind == "NamespaceDecl":
            if name in PRIVATE_NAMESPACES:
                continue
            for line in lines[1:]:
                m = CHILD.match(line)
                if m and m.group(1).endswith("Decl"):
                    child = child_name(line)
                    if child:
                        names.add(f"{name}::{child}")
            continue
        names.add(name)
        if kind == "EnumDecl" and not re.search(r"\b(class|struct)\s+" + name + r"\b", lines[0]):
            for line in lines[1:]:
                if line.startswith(("|-EnumConstantDecl", "`-EnumConstantDecl")):
                    names.add(child_name(line))
    return names


def module_names(cppm: str) -> set[str]:
    text = re.sub(r"//[^\n]*", "", cppm)
    return set(re.findall(r"\busing\s+dlb::((?:\w+::)*\w+)\s*;", text))


def main(argv: list[str]) -> int:
    split = argv.index("--")
    cppm_path, header = argv[:split]
    compiler = argv[split + 1:]
    dump = subprocess.run(
        compiler + ["-fsyntax-only", "-fno-color-diagnostics", "-Wno-pragma-once-outside-header",
                    "-Xclang", "-ast-dump", "-Xclang", "-ast-dump-filter", "-Xclang", "dlb::",
                    "-x", "c++-header", header],
        capture_output=True, text=True, check=True).stdout
    public = header_names(dump)
    with open(cppm_path, encoding="utf-8") as f:
        exported = module_names(f.read())
    missing, unknown = sorted(public - exported), sorted(exported - public)
    for name in missing:
        print(f"not exported by {cppm_path}: dlb::{name}")
    for name in unknown:
        print(f"exported by {cppm_path} but not in the headers: dlb::{name}")
    print(f"{len(public)} public names in the headers, {len(exported)} exported by the module")
    return 1 if missing or unknown or not public else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
