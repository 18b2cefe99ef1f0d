"""The benchmark's Python programs load: `make bench` starts the services (about a minute)
before it runs bench/bench.py, so a program that cannot import its modules fails only then
(bench/soak.py imports the chaos suite's modules once its settings are read). Each one's
--help needs no service."""

import subprocess
import sys

import pytest

from stack import ROOT

PROGRAMS = ["bench.py", "cluster.py", "report.py", "longpoll.py", "soak.py", "latency.py"]


@pytest.mark.parametrize("program", PROGRAMS)
def test_bench_program_loads(program):
    p = subprocess.run([sys.executable, str(ROOT / "bench" / program), "--help"], cwd=ROOT / "bench",
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"bench/{program} --help:\n{p.stderr[-2000:]}"
    assert "usage" in p.stdout.lower()
