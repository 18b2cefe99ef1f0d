"""Fixtures of the integration suite.

The suite drives the real binaries (seckill-server, order-consumer, seckillctl) against
the real Redis, Kafka and MariaDB that `scripts/stack.sh up --services-only` started. It
starts and stops the gateway and the consumer itself, one pair per test module, each
module with its own configuration file; it never starts or stops the backing services.

Environment:
  SECKILL_ROOT  repository root (default: two levels above this file)
  SECKILL_BIN   directory holding the three binaries
                (default: build/asan when it holds seckill-server, else build)
  SECKILL_CONF  base configuration the per-module files are derived from
                (default: build/conf/test.conf, the test stack of `make test`:
                conf/seckill.conf + test/conf/namespace.conf); its redis/kafka/mysql
                settings name the backing services. Never the demo's conf/seckill.conf:
                the tests would take its orders and fill its database.

Every test creates its own coupon and activity, so the suite runs again and again
against the same services without relying on empty tables or an empty Kafka topic.

Configuration values come from seckillctl (test/lib/ctlconf.py), Redis is reached through
test/lib/resp.py, the gateway through test/lib/gatewayhttp.py; test/pytest.ini puts
test/lib on the import path.
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
import requests

from ctlconf import Conf
from luabody import lua_body
from mariadb import MySQL, RowLock  # noqa: F401 - the test modules import them from here
from gatewayhttp import Api
from resp import RedisError, redis_client
from strictoutcomes import pytest_runtest_makereport  # noqa: F401 - a hook: xpass fails

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


def poll_until(predicate, timeout, what, interval=POLL):
    """Calls predicate until it returns a true value, which is returned; fails the test
    naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


# ---- configuration -----------------------------------------------------------------------


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


# ---- backends ----------------------------------------------------------------------------


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


def healthz_ok(port):
    """A gateway (or seckill-admin) on 127.0.0.1:port answers GET /healthz with 200."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
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


# ---- seckillctl --------------------------------------------------------------------------


class CtlResult:
    def __init__(self, args, rc, stdout, stderr):
        self.args, self.rc, self.stdout, self.stderr = args, rc, stdout, stderr

    def __iter__(self):
        return iter((self.rc, self.stdout, self.stderr))

    def __repr__(self):
        return (f"seckillctl {' '.join(self.args)} -> rc {self.rc}\n"
                f"stdout: {self.stdout.strip()}\nstderr: {self.stderr.strip()}")

    def last_line(self):
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        return lines[-1].strip() if lines else ""


class Sale:
    def __init__(self, activity_id, coupon_id, stock):
        self.activity_id, self.coupon_id, self.stock = activity_id, coupon_id, stock

    def __repr__(self):
        return f"Sale(activity={self.activity_id}, coupon={self.coupon_id}, stock={self.stock})"


class Ctl:
    def __init__(self, conf):
        self.conf = conf
        self.binary = BIN / "seckillctl"

    def __call__(self, *args, timeout=120):
        args = [str(a) for a in args]
        p = subprocess.run([str(self.binary), "-c", str(self.conf.path)] + args, cwd=ROOT,
                           env=child_env(), capture_output=True, text=True, timeout=timeout)
        return CtlResult(args, p.returncode, p.stdout, p.stderr)

    def run_ok(self, *args):
        r = self(*args)
        assert r.rc == 0, repr(r)
        return r

    def create_id(self, *args):
        r = self.run_ok(*args)
        text = r.last_line()
        assert text.isdigit(), f"expected an id alone on the last line: {r!r}"
        return int(text)

    def create_sale(self, stock, start="now", end="+1h", name=None):
        coupon = self.create_id("coupon", "create", "--name", "t", "--type", "CASH",
                                "--amount", "5.00", "--min-order", "10.00",
                                "--total", stock * 2, "--start", "-1m", "--end", "+1d")
        args = ["activity", "create", "--coupon", coupon, "--stock", stock,
                "--start", start, "--end", end]
        if name:
            args += ["--name", name]
        return Sale(self.create_id(*args), coupon, stock)


# ---- sale state --------------------------------------------------------------------------


def won_coupon(ctl, api, mysql, redis, ids):
    """A user and the user coupon they won through the normal gateway, in Redis."""
    sale = ctl.create_sale(2)
    user = ids()
    r = api.execute(user, sale.activity_id)
    assert r.code == 200, repr(r)
    order_no = r["orderNo"]
    poll_until(lambda: api.order_status(order_no) == "SUCCESS", 20, f"order {order_no} to be SUCCESS")
    uc_id = int(poll_until(lambda: mysql.rows(f"SELECT id FROM user_coupon WHERE source_ref = '{order_no}'"),
                           20, "the user coupon row")[0][0])
    key = f"seckill:ucoupon:{{u{user}}}"
    poll_until(lambda: redis("HEXISTS", key, str(uc_id)) == 1, 20, "the coupon record in Redis")
    return user, uc_id, key


def execute_script(redis, conf, activity_id, user, order_no, accepted_ms):
    """The Redis half of an execute, as a gateway that died before producing leaves it."""
    keys = [conf.key(k, activity_id) for k in ("activity", "stock", "users", "orders", "resv")]
    keys += [f"seckill:{k}:{{{activity_id}}}:{user}" for k in ("rl:user", "rl:ip", "brush", "ban", "token")]
    args = ["0", "1000", "1000", "0", "1000", "60", "0", str(user), order_no, str(accepted_ms)]
    verdicts = redis("EVAL", lua_body("execute"), len(keys), *keys, *args)
    assert verdicts[0][0] == "OK", verdicts


def live_reservations(redis, conf, activity_id):
    """Orders Redis still holds between accept and SUCCESS/FAILED."""
    return (redis("ZCARD", conf.key("resv", activity_id))
            + redis("SCARD", conf.key("queued", activity_id))
            + redis("SCARD", conf.key("claimed", activity_id)))


def buy_order(conf, user, activity):
    """One order through the module's gateway, which must accept it: its order number."""
    r = requests.post(f"{conf.base_url}/seckill/execute", params={"userId": user, "activityId": activity},
                      timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["orderNo"]


def order_rows(mysql, activity_id):
    """{order_no: user_id} of the activity's rows in seckill_order."""
    rows = mysql.rows(f"SELECT order_no, user_id FROM seckill_order WHERE activity_id = {activity_id}")
    return {r[0]: int(r[1]) for r in rows}


def success_count(redis, conf, activity_id):
    return sum(1 for s in redis("HVALS", conf.key("orders", activity_id)) or [] if s == "SUCCESS")


def wait_for_consumer(mysql, redis, conf, activity_id, expected_rows=None, consumer=None, timeout=90):
    """Polls until Redis has no live reservation of the activity left (every accepted
    order confirmed and finalized, or released) and MySQL holds `expected_rows` orders of
    it; with expected_rows None, as many as Redis counts SUCCESS orders. Returns the
    number of rows."""
    state = {}

    def caught_up():
        state["live"] = live_reservations(redis, conf, activity_id)
        want = expected_rows if expected_rows is not None else success_count(redis, conf, activity_id)
        state["rows"] = mysql.count(
            f"SELECT COUNT(*) FROM seckill_order WHERE activity_id = {activity_id}")
        state["want"] = want
        return state["rows"] == want and state["live"] == 0

    deadline = time.monotonic() + timeout
    while not caught_up():
        if expected_rows is not None and state["rows"] > expected_rows:
            break
        if time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    else:
        return state["rows"]
    tail = f"\nconsumer log:\n{consumer.log_tail(30)}" if consumer else ""
    pytest.fail(f"activity {activity_id}: expected {state['want']} rows and no live "
                f"reservation, have {state['rows']} rows and {state['live']} live "
                f"reservations after {timeout}s{tail}")


# ---- fixtures ----------------------------------------------------------------------------


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


# Fixtures that reach running services or start a stack of their own. A test whose
# fixtures reach none of them is one `make check` runs (-m "not stack").
STACK_FIXTURES = {"services", "cluster_services", "stack"}
# The modules on the tests' cluster (cluster_services), marked `cluster`: make test-cluster
# runs them, make test the others. In lanes they all run on one worker, the one that
# brings the cluster up: a second worker would bring up the same cluster on the same
# ports beside it. Collection refuses a module on the cluster not named here.
CLUSTER_MODULES = {"test_cluster_buckets.py", "test_cluster_topology.py", "test_longpoll_cluster.py",
                   "test_redis_failover.py"}
IN_LANES = bool(os.environ.get("PYTEST_XDIST_WORKER"))


def pytest_collection_modifyitems(config, items):
    """Marks the tests that need a stack, and moves the ones on the tests' cluster (a
    stable sort: each module's tests stay together and in order) after all others, so
    that the cluster never runs beside them; in lanes, before all others, so that one
    lane takes them at once while the other runs the rest."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if STACK_FIXTURES & fixtures:
            item.add_marker(pytest.mark.stack)
        if "cluster_services" in fixtures and item.path.name not in CLUSTER_MODULES:
            raise pytest.UsageError(f"{item.path.name} uses the tests' cluster: add it to CLUSTER_MODULES (conftest.py)")
        if item.path.name in CLUSTER_MODULES:
            item.add_marker(pytest.mark.cluster)
    items.sort(key=lambda item: ("cluster_services" in getattr(item, "fixturenames", ())) != IN_LANES)


def pytest_xdist_make_scheduler(config, log):
    """Lanes get whole modules (a module's fixtures start its gateway and consumer once),
    and every module on the cluster goes to the same lane."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            module = nodeid.split("::", 1)[0]
            return "cluster" if module.rpartition("/")[2] in CLUSTER_MODULES else module

    return ModuleScheduling(config, log)


@pytest.fixture(scope="session")
def base_conf():
    assert BASE_CONF.exists(), f"base configuration {BASE_CONF} not found (make build/conf/test.conf)"
    return conf_of(BASE_CONF)


@pytest.fixture(scope="session")
def services(base_conf):
    """The backing services answer, or the whole suite stops with one clear message."""
    return connect_backends(base_conf, "integration tests")


@pytest.fixture(scope="session")
def redis(services):
    return services["redis"]


@pytest.fixture(scope="module", autouse=True)
def archived_sales_forgotten(request):
    """After each module on the single stack, the activity hashes archived sales kept go
    too, so that those sales read as never having existed: most modules' gateways run
    without seckill-admin, and answer a read of an archived sale's orders 503
    (test_openapi.py's fuzzer reads whatever ids it likes)."""
    used = set()
    for item in request.session.items:
        if getattr(item, "module", None) is request.module:
            used.update(getattr(item, "fixturenames", ()))
    redis = request.getfixturevalue("redis") if "services" in used and "cluster_services" not in used else None
    yield
    if redis is None:
        return
    cursor = "0"
    while True:
        cursor, keys = redis("SCAN", cursor, "MATCH", "seckill:activity:*", "COUNT", "1000")
        for key in keys:
            if redis("HEXISTS", key, "archived"):
                redis("DEL", key)
        if cursor == "0":
            break


@pytest.fixture(scope="session")
def mysql(services):
    return services["mysql"]


CLUSTER_CONF = ROOT / "build" / "conf" / "test-cluster.conf"
CLUSTER_UP_TIMEOUT = 240


def cluster_sh(env, script, *args, timeout=120):
    return subprocess.run(["bash", str(ROOT / "scripts" / script), *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def cluster_services():
    """The tests' cluster services (build/conf/test-cluster.conf: a Redis Cluster of three
    masters with two replicas each, three Kafka nodes, MariaDB), up once for every module on
    them, and down after the last (pytest_collection_modifyitems keeps them together). A
    module starts what it runs on top of them and leaves them healthy; an `up` at the
    start of a module starts again whatever a module before it left stopped. Returns the
    environment of scripts/stack.sh for them."""
    assert CLUSTER_CONF.exists(), f"{CLUSTER_CONF} not found (make {CLUSTER_CONF.relative_to(ROOT)})"
    env = dict(child_env(), CONF=str(CLUSTER_CONF), STACK_BIN_DIR=str(BIN))
    try:
        p = cluster_sh(env, "stack.sh", "up", "--services-only", timeout=CLUSTER_UP_TIMEOUT)
        assert p.returncode == 0, f"stack.sh up --services-only failed:\n{p.stdout}\n{p.stderr}"
        yield env
    finally:
        p = cluster_sh(env, "stack.sh", "down", timeout=180)
        assert p.returncode == 0, f"stack.sh down failed:\n{p.stdout}\n{p.stderr}"


@pytest.fixture(scope="module")
def conf(request, tmp_path_factory, services):
    """The module's configuration: TEST_LIMITS plus the module's CONF_OVERRIDES dict."""
    overrides = getattr(request.module, "CONF_OVERRIDES", {})
    d = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    return write_conf(d / "seckill.conf", overrides)


SLOW_US = 10_000


@pytest.fixture
def slowlog(redis):
    """SLOWLOG at SLOW_US (10 ms) for the test, the server's settings put back after it."""
    old = dict(zip(*[iter(redis("CONFIG", "GET", "slowlog-*"))] * 2))
    redis("CONFIG", "SET", "slowlog-log-slower-than", str(SLOW_US))
    redis("CONFIG", "SET", "slowlog-max-len", "1024")
    redis("SLOWLOG", "RESET")
    yield
    for k, v in old.items():
        redis("CONFIG", "SET", k, v)


@pytest.fixture(scope="module")
def ids():
    """Fresh user ids for every call, distinct across runs against the same services."""
    base = int(time.time() * 1000) % 10**12 * 1000
    counter = iter(range(base + 1, base + 10**6))
    return lambda: next(counter)


@pytest.fixture(scope="module")
def logdir(conf):
    return conf.path.parent


@pytest.fixture(scope="module")
def ctl(conf):
    return Ctl(conf)


@pytest.fixture(scope="module")
def consumer(conf, logdir):
    c = Consumer(conf, logdir)
    c.start()
    yield c
    c.finish()


@pytest.fixture(scope="module")
def gateway(conf, logdir):
    g = Gateway(conf, logdir)
    g.start()
    yield g
    # The drain may take http.request-timeout-ms plus the Kafka flush.
    g.finish(timeout=int(conf.get("http.request-timeout-ms")) / 1000 + 20)


@pytest.fixture(scope="module")
def api(gateway):
    return Api(gateway.base_url)


def _starter(tmp_path, name, service, finish_timeout):
    """A fixture's function that starts services of `service`'s class with their own
    settings and, when given, RLIMIT_NOFILE (soft, hard); each is stopped and checked
    (exit 0, sanitizer-clean log) by the generator's end."""
    started = []

    def start(overrides, nofile=None):
        d = tmp_path / f"{name}{len(started)}"
        d.mkdir()
        s = service(write_conf(d / "seckill.conf", overrides), d)
        s.nofile = nofile
        started.append(s)
        return s.start()

    yield start
    for s in started:
        s.finish(timeout=finish_timeout(s))


@pytest.fixture
def gateway_with(tmp_path, services):
    """Gateways with their own settings (on top of the suite's relaxed limits)."""
    yield from _starter(tmp_path, "gateway", Gateway,
                        lambda g: int(g.conf.get("http.request-timeout-ms")) / 1000 + 20)


@pytest.fixture
def admin_with(tmp_path, services):
    """seckill-admins with their own settings (admin.port and admin.token are needed), and
    the RLIMIT_NOFILE a service manager would give them."""
    yield from _starter(tmp_path, "admin", AdminServer, lambda a: 60)


@pytest.fixture(scope="module")
def admin_server(conf, logdir):
    """seckill-admin on the module's configuration (its CONF_OVERRIDES set admin.port and
    admin.token); a long verify may still run at the end, hence the wait."""
    s = AdminServer(conf, logdir)
    s.start()
    yield s
    s.finish(timeout=120)
