"""The stack the integration tests, the chaos suite and the soak drive: where the binaries
and the base configuration are, a module's configuration derived from it, the binaries as
processes (started, checked ready, stopped, their logs read), the backing services' scripts,
and the one poll every wait of the suites uses.

Environment (test/integration/conftest.py says more):
  SECKILL_ROOT, SECKILL_BIN, SECKILL_CONF, SECKILL_LANE_CONFS
"""

import http.client
import os
import re
import resource
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from ctlconf import Conf
from mariadb import MySQL
from resp import RedisError, redis_client

ROOT = Path(os.environ.get("SECKILL_ROOT") or Path(__file__).resolve().parents[2]).resolve()


def _resolve(path):
    """A path from the environment: absolute, else relative to the working directory
    when it exists there, else relative to the repository root."""
    p = Path(path)
    if p.is_absolute():
        return p
    if p.exists():
        return p.resolve()
    return ROOT / p


def _default_bin():
    asan = ROOT / "build" / "asan"
    return asan if (asan / "seckill-server").exists() else ROOT / "build"


BIN = _resolve(os.environ["SECKILL_BIN"]) if os.environ.get("SECKILL_BIN") else _default_bin()


def _lane_conf():
    """make test runs this suite in lanes, pytest-xdist workers gw0, gw1, ..., each on a
    stack of its own: SECKILL_LANE_CONFS lists their configurations in worker order.
    Outside of lanes, SECKILL_CONF."""
    lanes = os.environ.get("SECKILL_LANE_CONFS", "").split()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if lanes and worker.startswith("gw"):
        return lanes[int(worker[2:]) % len(lanes)]
    return os.environ.get("SECKILL_CONF")


BASE_CONF = _resolve(_lane_conf() or ROOT / "build" / "conf" / "test.conf")

# The clients of these tests all come from 127.0.0.1 and hammer one activity: the global
# token bucket, the local and the per-activity per-IP limits, the per-user limits and the
# anti-brush ban would refuse most of them. A module that tests those limits sets its own
# values.
TEST_LIMITS = {
    "seckill.rate-limit.permits-per-second": "1000000",
    "seckill.rate-limit.burst-capacity": "1000000",
    "seckill.rate-limit.per-ip-local-permits-per-second": "1000000",
    "seckill.rate-limit.per-ip-local-burst": "1000000",
    "seckill.max-requests-per-ip": "100000000",
    "seckill.max-requests-per-user": "1000",
    "seckill.anti-brush-threshold": "1000",
}

SANITIZER_LINE = re.compile(r"ERROR: \w*Sanitizer|runtime error:|SUMMARY: \w*Sanitizer")

# Every wait of the suite is a bounded poll at this period.
POLL = 0.05


def poll_until(predicate, timeout, what, interval=POLL, detail=None):
    """Calls predicate until it returns a true value, which is returned; fails the test
    naming `what` after `timeout` seconds, with what detail() says then when given."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}" + (f": {detail()}" if detail else ""))
        time.sleep(interval)


# ---- configuration -----------------------------------------------------------------------


def _port_block():
    """The ports free_port hands out in this process: the 2,700 below the kernel's ephemeral
    range, where no outgoing connection of another process can take one between the choice
    and the listener's bind, split between make test's lanes so that two lanes never choose
    the same one. The stacks' own services listen below them."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    first = max(low - 2700, 1024)
    lanes = max(len(os.environ.get("SECKILL_LANE_CONFS", "").split()), 1)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    lane = int(worker[2:]) % lanes if worker.startswith("gw") else 0
    size = (low - first) // lanes
    return range(first + lane * size, first + (lane + 1) * size)


_PORTS = _port_block()
_next_port = [os.getpid() % len(_PORTS)]


def free_port():
    """A port nothing listens on, for a listener a test starts; never the same one twice in
    a row of this process, so that a port chosen and not yet bound is not chosen again."""
    for _ in range(len(_PORTS)):
        port = _PORTS[_next_port[0]]
        _next_port[0] = (_next_port[0] + 1) % len(_PORTS)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError(f"no free port in {_PORTS.start}-{_PORTS.stop - 1}")


def conf_of(path):
    """A configuration file as the binaries under test read it (the environment they get
    from child_env, so a SECKILL_* variable of the caller does not leak in)."""
    return Conf(path, BIN / "seckillctl", child_env())


def write_conf(path, overrides=None):
    """Writes a config file derived from BASE_CONF: a free HTTP port and a free port for
    the consumer's /metrics, the relaxed limits of TEST_LIMITS, then `overrides` (a dict,
    applied last)."""
    extra = {"http.port": str(free_port()), "consumer.metrics-port": str(free_port())}
    extra.update(TEST_LIMITS)
    extra.update({k: str(v) for k, v in (overrides or {}).items()})
    text = BASE_CONF.read_text(encoding="utf-8")
    lines = [text.rstrip("\n"), "", "# --- integration test overrides ---"]
    lines += [f"{k} = {v}" for k, v in extra.items()]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return conf_of(path)


def child_env():
    """The environment of the binaries. SECKILL_<KEY> variables override config keys in
    every binary, so none leaks in from the caller: the file alone decides."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECKILL_")}
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
    return env


# ---- processes ---------------------------------------------------------------------------


class Service:
    """One of our binaries, started with `-c FILE`, its stdout and stderr appended to one
    log file. Every clean stop's exit status is recorded for the teardown checks."""

    def __init__(self, name, conf, logdir):
        self.name = name
        self.conf = conf
        self.binary = BIN / name
        self.log = Path(logdir) / f"{name}.log"
        self.proc = None
        self.offset = 0         # log size when the current process started
        self.exits = []         # (pid, returncode) of every SIGTERM stop
        self.kills = 0
        self.nofile = None      # (soft, hard) RLIMIT_NOFILE to start it with, or None: ours

    # -- readiness, per binary
    def is_ready(self):
        raise NotImplementedError

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self):
        return self.proc.pid

    def log_text(self, since_start=False):
        try:
            with open(self.log, "rb") as f:
                if since_start:
                    f.seek(self.offset)
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, n=60):
        return "\n".join(self.log_text().splitlines()[-n:])

    def start(self, timeout=30):
        assert not self.running, f"{self.name} is already running"
        assert self.binary.exists(), f"{self.binary} is not built"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as logf:
            self.proc = subprocess.Popen(
                [str(self.binary), "-c", str(self.conf.path)], cwd=ROOT, env=child_env(),
                stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=self._limits if self.nofile else None)
        deadline = time.monotonic() + timeout
        while not self.is_ready():
            if self.proc.poll() is not None:
                pytest.fail(f"{self.name} exited with {self.proc.returncode} while starting; "
                            f"log {self.log}:\n{self.log_tail()}")
            if time.monotonic() >= deadline:
                pytest.fail(f"{self.name} not ready after {timeout}s; log {self.log}:\n"
                            f"{self.log_tail()}")
            time.sleep(POLL)
        return self

    def _limits(self):
        """In the child before exec: the descriptor limit a service would get."""
        resource.setrlimit(resource.RLIMIT_NOFILE, self.nofile)

    def terminate(self):
        """Sends SIGTERM and returns at once."""
        self.proc.send_signal(signal.SIGTERM)

    def wait(self, timeout):
        """Waits for the process to exit; returns its status, or None on timeout."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout=30):
        """SIGTERM and a bounded wait. Returns the exit status; a process that does not
        exit in time is killed and the test fails."""
        if self.proc is None:
            return None
        if not self.running:
            return self.proc.returncode
        self.terminate()
        rc = self.wait(timeout)
        if rc is None:
            self.proc.kill()
            self.proc.wait()
            self.exits.append((self.proc.pid, "hung"))
            pytest.fail(f"{self.name} did not exit within {timeout}s of SIGTERM; log:\n"
                        f"{self.log_tail()}")
        self.exits.append((self.proc.pid, rc))
        return rc

    def record_exit(self):
        """For a test that sent SIGTERM itself and waited: remember the status."""
        self.exits.append((self.proc.pid, self.proc.returncode))

    def kill9(self):
        assert self.running, f"{self.name} is not running"
        self.proc.kill()
        self.proc.wait()
        self.kills += 1

    def restart(self, timeout=30):
        if self.running:
            self.stop()
        return self.start(timeout)

    def sanitizer_lines(self):
        return [line for line in self.log_text().splitlines() if SANITIZER_LINE.search(line)]

    def finish(self, timeout=30):
        """Teardown: stop, then check every clean exit was 0 and the log is clean."""
        self.stop(timeout)
        bad = [(pid, rc) for pid, rc in self.exits if rc != 0]
        sanitizer = self.sanitizer_lines()
        assert not sanitizer, (f"{self.name}: sanitizer reports in {self.log}:\n"
                               + "\n".join(sanitizer[:20]) + f"\n...\n{self.log_tail()}")
        assert not bad, (f"{self.name}: exit status after SIGTERM was not 0: {bad}; "
                         f"log {self.log}:\n{self.log_tail()}")


def healthz_ok(port, host="127.0.0.1"):
    """A gateway (or seckill-admin) on host:port answers GET /healthz with 200."""
    try:
        c = http.client.HTTPConnection(host, port, timeout=2)
        c.request("GET", "/healthz")
        ok = c.getresponse().status == 200
        c.close()
        return ok
    except OSError:
        return False


class Gateway(Service):
    # Log lines that mean accepted work was left undone at a stop.
    LOST_WORK = ("drain deadline passed", "queued marks never reached Redis")

    def __init__(self, conf, logdir):
        super().__init__("seckill-server", conf, logdir)
        self.base_url = conf.base_url

    def finish(self, timeout=30):
        super().finish(timeout)
        lost = [line for line in self.log_text().splitlines()
                if any(p in line for p in self.LOST_WORK)]
        assert not lost, f"{self.name} stopped with work undone ({self.log}):\n" + "\n".join(lost)

    def is_ready(self):
        return healthz_ok(self.conf.http_port)


class DeafKafkaGateway(Gateway):
    """A gateway whose broker never answers (its kafka.brokers an address nobody listens
    on): its /healthz says 503 for good, so it is ready once it answers at all."""

    def is_ready(self):
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.conf.http_port, timeout=2)
            c.request("GET", "/healthz")
            c.getresponse().read()
            c.close()
            return True
        except OSError:
            return False


class Consumer(Service):
    def __init__(self, conf, logdir):
        super().__init__("order-consumer", conf, logdir)

    def is_ready(self):
        return "order-consumer: ready" in self.log_text(since_start=True)


class AdminServer(Service):
    """seckill-admin on the config's admin.port (admin.token set by the module)."""

    def __init__(self, conf, logdir):
        super().__init__("seckill-admin", conf, logdir)
        self.port = int(conf.get("admin.port"))

    def is_ready(self):
        return healthz_ok(self.port)


def kafka_script(*args, timeout=60):
    """scripts/kafka.sh ARGS on the suite's own broker (BASE_CONF), never on whichever
    stack CONF of the caller's environment names."""
    subprocess.run(["bash", str(ROOT / "scripts" / "kafka.sh"), *args], cwd=ROOT, check=True,
                   env=dict(child_env(), CONF=str(BASE_CONF)), capture_output=True, timeout=timeout)


def connect_backends(conf, who):
    """Redis and MariaDB clients for `conf` once the binaries exist and Redis, MariaDB and
    Kafka answer; otherwise the whole run stops with one clear message naming `who`."""
    missing = [f"{BIN / name} is not built (make; make SANITIZE=1 BUILD=build/asan)"
               for name in ("seckill-server", "order-consumer", "seckillctl")
               if not (BIN / name).exists()]
    if missing:
        pytest.exit(f"{who} need the binaries:\n  " + "\n  ".join(missing), returncode=1)
    problems = []
    redis = redis_client(conf)
    try:
        pong = redis("PING")
        if pong != "PONG":
            problems.append(f"redis answered {pong!r} to PING")
    except (OSError, ConnectionError, RedisError) as e:
        problems.append(f"redis {redis.addr[0]}:{redis.addr[1]} does not answer: {e}")
    mysql = MySQL(conf)
    try:
        if mysql.scalar("SELECT COUNT(*) FROM seckill_order WHERE 1 = 0") != "0":
            problems.append("mariadb: unexpected answer")
    except (AssertionError, OSError, subprocess.TimeoutExpired) as e:
        problems.append(f"mariadb {conf.get('mysql.host')}:{conf.get('mysql.port')}: {e}")
    brokers = conf.get("kafka.brokers").split(",")[0]
    host, _, port = brokers.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as e:
        problems.append(f"kafka {brokers} does not accept connections: {e}")
    if problems:
        pytest.exit(f"{who} need the backing services (bash scripts/stack.sh up "
                    "--services-only):\n  " + "\n  ".join(problems), returncode=1)
    return {"redis": redis, "mysql": mysql}


CLUSTER_CONF = ROOT / "build" / "conf" / "test-cluster.conf"
CLUSTER_UP_TIMEOUT = 240


def cluster_sh(env, script, *args, timeout=120):
    return subprocess.run(["bash", str(ROOT / "scripts" / script), *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout)
