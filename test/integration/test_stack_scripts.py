"""scripts/stack.sh brings the consumer and the gateway up whatever the log level, and a
second `up` with another configuration restarts them with it.

The shared services (Redis, Kafka, MariaDB) stay as they are: the test runs the scripts
from a copy of scripts/ and conf/ with its own data directory (pid files, logs) and the release
binaries of build/, and uses `up --apps-only`, which starts only the two processes."""

import http.client
import shutil
import subprocess
import time

import pytest

from stack import BASE_CONF, ROOT, child_env, conf_of, poll_until, write_conf

UP_TIMEOUT = 90


@pytest.fixture
def clone(tmp_path, services):
    d = tmp_path / "checkout"
    d.mkdir()
    for sub in ("scripts", "conf"):
        shutil.copytree(ROOT / sub, d / sub)
    (d / "build").symlink_to(ROOT / "build")
    yield d
    # The configuration names the pid files: every one here shares BASE_CONF's data
    # directory, so BASE_CONF finds what the test started. Without it `down` looked at
    # conf/seckill.conf's and left both running, on the shared services, for good.
    p = subprocess.run(["bash", "scripts/stack.sh", "down", "--apps-only"], cwd=d,
                       env=dict(child_env(), CONF=str(BASE_CONF)), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    run = conf_of(BASE_CONF).data_dir(d) / "run"
    for name in ("order-consumer", "seckill-server"):
        pidfile = run / f"{name}.pid"
        if pidfile.exists():
            pid = int(pidfile.read_text().strip())
            assert not alive(pid), f"{name} (pid {pid}) still running after stack.sh down"


def stack(clone, conf, *args):
    env = dict(child_env(), CONF=str(conf.path))
    started = time.monotonic()
    p = subprocess.run(["bash", "scripts/stack.sh", *args], cwd=clone, env=env,
                       capture_output=True, text=True, timeout=UP_TIMEOUT)
    return p, time.monotonic() - started


def pid_of(clone, name):
    # Every config here is derived from BASE_CONF and so has its stack.data-dir.
    run = conf_of(BASE_CONF).data_dir(clone) / "run"
    return int((run / f"{name}.pid").read_text().strip())


def alive(pid):
    """Running and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][:1] != "Z"
    except OSError:
        return False


def answers(port, path="/healthz"):
    try:
        c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=2)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read().decode()
        c.close()
        return r.status, body
    except OSError:
        return None, ""


@pytest.mark.parametrize("level", ["warn", "error"])
def test_up_whatever_the_log_level(clone, tmp_path, level):
    conf = write_conf(tmp_path / f"{level}.conf", {"log.level": level})
    p, took = stack(clone, conf, "up", "--apps-only")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "order-consumer: started" in p.stdout and "seckill-server: started" in p.stdout, p.stdout
    assert took < 25, f"up took {took:.1f} s"
    status, body = answers(conf.get("consumer.metrics-port"), "/metrics")
    assert status == 200 and "\nseckill_consumer_ready 1" in body
    assert answers(conf.get("http.port"))[0] == 200
    # A second up with the same configuration leaves both alone.
    pids = pid_of(clone, "order-consumer"), pid_of(clone, "seckill-server")
    p, _ = stack(clone, conf, "up", "--apps-only")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "already running" in p.stdout, p.stdout
    assert (pid_of(clone, "order-consumer"), pid_of(clone, "seckill-server")) == pids


def test_up_with_another_config_restarts_with_it(clone, tmp_path):
    first = write_conf(tmp_path / "first.conf")
    p, _ = stack(clone, first, "up", "--apps-only")
    assert p.returncode == 0, p.stdout + p.stderr
    old = pid_of(clone, "order-consumer"), pid_of(clone, "seckill-server")

    second = write_conf(tmp_path / "second.conf", {"log.level": "warn"})
    assert second.get("http.port") != first.get("http.port")
    p, took = stack(clone, second, "up", "--apps-only")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "restarting" in p.stdout, p.stdout
    assert took < 45, f"up took {took:.1f} s"
    new = pid_of(clone, "order-consumer"), pid_of(clone, "seckill-server")
    assert all(a != b for a, b in zip(old, new)), (old, new)
    assert answers(second.get("http.port"))[0] == 200
    poll_until(lambda: answers(first.get("http.port"))[0] is None, 10, "the old gateway's port to close")
    poll_until(lambda: not any(alive(pid) for pid in old), 10, f"the old processes {old} to exit")

    # Editing the file in place counts as another configuration too.
    with open(second.path, "a") as f:
        f.write("seckill.activity-refresh-ms = 900\n")
    p, _ = stack(clone, second, "up", "--apps-only")
    assert p.returncode == 0 and "restarting" in p.stdout, p.stdout + p.stderr
    assert pid_of(clone, "seckill-server") != new[1]
