"""Writes tests/constraints.txt: the exact version of every package that
tests/requirements.txt brings into this environment, its dependencies
included, as installed now. tests/run installs with it, so that the tests'
outcome depends on the commit and not on the day's releases.

    bash tests/run --newest            install the newest releases and run the tests with them
    python tools/test_constraints.py   then, where they pass: pin them (commit the file)

A dependency behind an environment marker is pinned where it is installed
here; one behind an extra (`; extra == ...`) is not followed.
"""
import importlib.metadata
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "tests" / "requirements.txt"
CONSTRAINTS = ROOT / "tests" / "constraints.txt"
NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(lines) -> list[str]:
    names = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-") and "extra ==" not in line.replace("extra==", "extra =="):
            names.append(NAME.match(line).group(1))
    return names


def closure(names: list[str]) -> dict[str, str]:
    """canonical name -> installed version, for `names` and what they require."""
    pinned: dict[str, str] = {}
    todo = list(names)
    while todo:
        name = canonical(todo.pop())
        if name in pinned:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # a dependency this platform or Python does not need
        # Without a local label (torch's +cpu): the same release from another index satisfies it too.
        pinned[name] = dist.version.split("+")[0]
        todo += requirement_names(dist.requires or [])
    return pinned


def main() -> int:
    wanted = requirement_names(REQUIREMENTS.read_text().splitlines())
    pins = closure(wanted)
    missing = [name for name in wanted if canonical(name) not in pins]
    if missing:
        print(f"not installed here: {', '.join(missing)}: bash tests/run --newest first", file=sys.stderr)
        return 1
    header = (f"# The versions the tests were run with (Python {sys.version_info.major}.{sys.version_info.minor}), "
              "written by python tools/test_constraints.py;\n"
              "# tests/run installs tests/requirements.txt with these (bash tests/run --newest: without).\n")
    CONSTRAINTS.write_text(header + "".join(f"{name}=={version}\n" for name, version in sorted(pins.items())))
    print(f"{CONSTRAINTS.relative_to(ROOT)}: {len(pins)} packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
