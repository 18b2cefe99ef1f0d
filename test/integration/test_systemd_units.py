"""The systemd units of deploy/systemd as `make install` puts them (issue 14 item 4).

Installed under a PREFIX of the test's own, so the paths they name are real: systemd's
own checker passes them without a word, its sandboxing analysis rates them well, every
file they name exists in the install, and systemd's stop timeout outlasts the drain the
binaries do on SIGTERM with the shipped configuration."""

import re
import subprocess
from pathlib import Path

import pytest

from stack import BIN, ROOT
from ctlconf import Conf
from makeinstall import make

SYSTEMD_ANALYZE = "/usr/bin/systemd-analyze"
UNITS = ("seckill-server@.service", "order-consumer@.service", "seckill-admin.service")


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    p = tmp_path_factory.mktemp("prefix") / "usr" / "local"
    make(ROOT, "install", p)
    return p


def unit_paths(prefix):
    return [prefix / "lib" / "systemd" / "system" / u for u in UNITS]


def settings(path):
    """{key: [values]} of a unit file's [Service] section."""
    out, section = {}, None
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]":
            key, _, value = line.partition("=")
            out.setdefault(key, []).append(value)
    return out


def seconds(value):
    m = re.fullmatch(r"(\d+)s?", value)
    assert m, f"TimeoutStopSec={value}: expected seconds"
    return int(m.group(1))


def test_units_pass_systemd_analyze_verify(prefix):
    units = unit_paths(prefix)
    p = subprocess.run([SYSTEMD_ANALYZE, "verify", *map(str, units)], capture_output=True,
                       text=True, timeout=120)
    # verify exits 0 on unknown keys and bad values too: it only says so.
    said = (p.stdout + p.stderr).strip()
    assert p.returncode == 0 and not said, f"systemd-analyze verify: exit {p.returncode}\n{said}"


def test_units_are_sandboxed(prefix):
    # Exposure 0-10 as systemd-analyze rates it; --threshold is in tenths.
    for unit in unit_paths(prefix):
        p = subprocess.run([SYSTEMD_ANALYZE, "security", "--offline=yes", "--threshold=20",
                            str(unit)], capture_output=True, text=True, timeout=120)
        level = re.search(r"Overall exposure level for \S+: ([\d.]+)", p.stdout)
        assert p.returncode == 0, f"{unit.name}: exposure {level and level.group(1)}\n{p.stdout[-3000:]}"


def test_units_name_files_the_install_has(prefix):
    for unit in unit_paths(prefix):
        s = settings(unit)
        binary = s["ExecStart"][0].split()[0]
        assert binary.startswith(str(prefix / "bin") + "/") and Path(binary).exists(), s
        credential = s["LoadCredential"][0].split(":", 1)[1]
        assert credential == str(prefix / "etc" / "seckill" / "seckill.conf"), s
        assert (prefix / "etc" / "seckill" / "seckill.conf").exists()
        assert "/usr/local/" not in unit.read_text(encoding="utf-8").replace(str(prefix), ""), \
            f"{unit.name} still names the default prefix"
        # Only SIGTERM stops them cleanly; no binary has a reload.
        assert s["KillSignal"] == ["SIGTERM"] and "ExecReload" not in s, s
        assert s["Restart"] == ["on-failure"], s


def test_stop_timeout_outlasts_the_drain(prefix):
    """With the shipped config, systemd must not SIGKILL a gateway still draining
    (src/gateway/seckillserver.c) nor a consumer finishing its batch (src/consumer/orderconsumer.c)."""
    conf = Conf(ROOT / "conf" / "seckill.conf", BIN / "seckillctl")
    request = int(conf.get("http.request-timeout-ms"))
    redis = int(conf.get("redis.timeout-ms"))
    # answers in flight + their margin, the 503s going out, the Kafka flush, the last
    # Redis writes
    gateway_ms = request + max(2000, redis + 1000) + 200 + 5000 + redis + 500
    gateway = seconds(settings(unit_paths(prefix)[0])["TimeoutStopSec"][0])
    assert gateway * 1000 > gateway_ms, f"TimeoutStopSec={gateway}s, the drain takes up to {gateway_ms} ms"
    # the batch being filled, a MySQL statement (5 s read timeout), the Redis finalize
    consumer_ms = int(conf.get("consumer.batch-timeout-ms")) + 5000 + redis
    consumer = seconds(settings(unit_paths(prefix)[1])["TimeoutStopSec"][0])
    assert consumer * 1000 > consumer_ms, f"TimeoutStopSec={consumer}s, the stop takes up to {consumer_ms} ms"
