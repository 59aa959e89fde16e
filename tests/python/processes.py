"""Whether a process the tests did not start themselves (a helper forked by
a library under the kit or the doctor) has ended."""
import time


def running(pid: int) -> bool:
    """Whether process `pid` runs (a zombie waiting for the init process to reap it has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def gone(pid: int, within: float = 60.0) -> bool:
    """Whether process `pid` ends within `within` seconds: one killed by SIGKILL takes a moment to exit."""
    deadline = time.monotonic() + within
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
