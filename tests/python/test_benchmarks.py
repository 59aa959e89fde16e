"""A smoke pass of the benchmarks so they never rot. No timing is asserted."""
import pathlib
import subprocess
import sys

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def test_exchange_benchmark_runs():
    result = subprocess.run([sys.executable, str(BENCHMARKS / "exchange.py"), "--quick"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if " / " in line]
    assert len(rows) == 5, result.stdout
    for row in rows:
        ours, peer, ratio = (float(v) for v in row.split()[-3:])
        assert ours > 0 and peer > 0 and ratio > 0
