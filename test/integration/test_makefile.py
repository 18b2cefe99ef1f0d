"""The README's commands work on their first invocation on a machine without the build
packages: `make run` installs them (the deps target) after the Makefile was read, so the
compile and link flags must be asked of pkg-config when a recipe needs them, not while
the Makefile is parsed.

Simulated with a pkg-config on PATH that finds nothing until the deps step ran (it
creates a stamp file) and `make -n`, which prints every recipe without running it; the
deps recipe runs all the same because it is marked '+' (make's "run even under -n").
scripts/fresh-check.sh proves the same on a real fresh Debian 12."""

import os
import shutil
import subprocess

import pytest

from stack import ROOT

REAL_PKG_CONFIG = shutil.which("pkg-config")


@pytest.fixture
def late_packages(tmp_path):
    """PATH and make variables under which the packages appear only once deps ran."""
    assert REAL_PKG_CONFIG, "pkg-config not installed (make deps)"
    stamp = tmp_path / "deps-ran"
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "pkg-config").write_text(
        "#!/bin/sh\n"
        f"[ -f '{stamp}' ] || exit 1\n"
        f"exec '{REAL_PKG_CONFIG}' \"$@\"\n")
    (fake / "pkg-config").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    env.pop("MAKEFLAGS", None)
    return env, stamp, tmp_path / "build"


def make_n(env, build, target, install_deps):
    return subprocess.run(["make", "-n", "-B", f"BUILD={build}", f"INSTALL_DEPS={install_deps}", target],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def links(out, binary):
    return [line for line in out.splitlines() if line.endswith(f"-o {binary}")]


def real_flags(*args):
    return subprocess.run([REAL_PKG_CONFIG, *args], capture_output=True, text=True, check=True).stdout.split()


@pytest.mark.parametrize("target,binary,packages", [
    ("run", "seckill-server", ["libevent", "hiredis", "rdkafka", "libcjson", "libcrypto"]),
    ("bench", "bench/baseline", ["libevent"]),
    ("chaos", "order-consumer", ["libevent", "hiredis", "rdkafka", "libcjson", "libmariadb"]),
    ("install", "install/seckill-admin", ["libevent", "hiredis", "libcjson", "libmariadb"]),
])
def test_first_invocation_links_with_the_packages_deps_installed(late_packages, target, binary, packages):
    env, stamp, build = late_packages
    p = make_n(env, build, target, f"+touch {stamp}")
    assert p.returncode == 0, f"make -n {target}: exit {p.returncode}\n{p.stderr[-2000:]}"
    lines = links(p.stdout, f"{build}/{binary}")
    assert lines, f"make -n {target} printed no link of {binary}:\n{p.stdout[-2000:]}"
    words = lines[-1].split()
    missing = [f for f in real_flags("--libs", *packages) if f not in words]
    assert not missing, f"the link of {binary} lacks {missing}: {lines[-1]}"
    # The store's files need MySQL's headers: their compiles carry its flags, asked late too.
    cflags = real_flags("--cflags", "libmariadb")
    compiles = [line for line in p.stdout.splitlines() if " -c src/store/" in line]
    assert compiles and all(f in compiles[0].split() for f in cflags), \
        f"compiles lack {cflags}: {compiles[:1]}"


def test_packages_that_never_appear_stop_the_build_with_their_names(late_packages):
    env, _, build = late_packages
    p = make_n(env, build, "all", "true")
    assert p.returncode != 0
    assert "pkg-config --cflags libevent" in p.stderr and "make deps" in p.stderr, p.stderr[-2000:]
    assert "undefined reference" not in p.stdout + p.stderr



def test_help_lists_every_target_once():
    phony = set()
    for line in (ROOT / "Makefile").read_text().splitlines():
        if line.startswith(".PHONY:"):
            phony.update(line.split(":", 1)[1].split())
    p = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    listed = []
    for line in p.stdout.splitlines():
        words = line.split()
        assert len(words) > 2 and words[0] == "make", f"not a target line: {line!r}"
        listed += words[1].strip("[]").split("|")
    assert sorted(set(listed)) == sorted(listed), f"listed twice: {listed}"
    assert phony <= set(listed), f"make help does not list {sorted(phony - set(listed))}"


def test_the_gateway_is_compiled_without_the_mysql_headers(tmp_path):
    """Each part is compiled with its own packages' flags: a gateway (or common) file that
    included mysql.h would not compile, so "the gateway never talks to MySQL" is checked
    at the first compile, not at link time."""
    env = dict(os.environ)
    env.pop("MAKEFLAGS", None)
    out = subprocess.run(["make", "-n", "-B", f"BUILD={tmp_path / 'build'}", "all"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    mysql = [f for f in real_flags("--cflags", "libmariadb") if f.startswith("-I")]
    assert mysql, "pkg-config --cflags libmariadb names no include directory"

    def compiles(part):
        found = [line for line in out.stdout.splitlines() if f" -c src/{part}/" in line]
        assert found, f"no compile of src/{part}/ in make -n"
        return found

    for part in ("gateway", "common"):
        crossing = [line for line in compiles(part) if any(flag in line.split() for flag in mysql)]
        assert not crossing, f"src/{part}/ compiled with MySQL's headers: {crossing[0]}"
    for part in ("consumer", "store", "ctl"):
        assert all(all(flag in line.split() for flag in mysql) for line in compiles(part))
