"""The suite runs with the Python the project sets up (scripts/venv.sh: var/venv from
Debian's interpreter, with the pins of test/requirements.txt), not whichever python3
comes first on PATH."""

import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from stack import ROOT


def pins():
    out = {}
    for line in (ROOT / "test" / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"not pinned: {line}"
            out[name.strip().lower()] = version.strip()
    return out


def test_runs_in_the_project_venv():
    venv = (ROOT / "var" / "venv").resolve()
    assert Path(sys.prefix).resolve() == venv, f"running under {sys.executable}, not {venv}"
    assert "pytest" in pins()


def test_installed_versions_are_the_pins():
    for name, version in pins().items():
        assert metadata.version(name) == version, name


def test_venv_script_is_idempotent():
    """A second set-up installs nothing and names the same interpreter."""
    started = time.monotonic()
    p = subprocess.run(["bash", "scripts/venv.sh"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    took = time.monotonic() - started
    assert p.returncode == 0, p.stderr
    assert Path(p.stdout.strip()).parent.parent.resolve() == Path(sys.prefix).resolve()
    assert "install" not in p.stderr, p.stderr
    assert took < 10, f"{took:.1f} s"
