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

The modules on the tests' cluster (make test-cluster) are test/cluster's, with fixtures of
their own (test/cluster/conftest.py): none here may ask for them. Fixtures both suites use
are in test/lib/sharedfixtures.py.

Configuration values come from seckillctl (test/lib/ctlconf.py), Redis is reached through
test/lib/resp.py, the gateway through test/lib/gatewayhttp.py; test/pytest.ini puts
test/lib on the import path.
"""

from pathlib import Path

import pytest

import sharedfixtures
import strictoutcomes
from gatewayhttp import Api
from sales import Ctl
from stack import BASE_CONF, AdminServer, Consumer, Gateway, conf_of, connect_backends, write_conf

# Registered here as this conftest's own (test/lib/sharedfixtures.py says why they live there).
ids = sharedfixtures.ids  # a fixture: fresh user ids
pytest_runtest_makereport = strictoutcomes.pytest_runtest_makereport  # a hook: xpass fails

HERE = Path(__file__).resolve().parent
# Fixtures that reach running services or start a stack of their own. A test whose
# fixtures reach none of them is one `make check` runs (-m "not stack").
STACK_FIXTURES = {"services", "stack"}
# The fixtures of the tests' cluster (test/cluster/conftest.py). Lanes would each bring the
# one cluster up on the same ports, and make test would run it: a module that asks for one
# belongs in test/cluster.
CLUSTER_FIXTURES = {"cluster", "cluster_services"}


def pytest_collection_modifyitems(config, items):
    """Marks the tests that need a stack, and refuses a module that asks for the tests'
    cluster (only the tests under this directory: a run of test/cluster beside it has its
    own)."""
    for item in items:
        if not item.path.resolve().is_relative_to(HERE):
            continue
        fixtures = set(getattr(item, "fixturenames", ()))
        if STACK_FIXTURES & fixtures:
            item.add_marker(pytest.mark.stack)
        if CLUSTER_FIXTURES & fixtures:
            raise pytest.UsageError(f"{item.path.name} asks for the tests' cluster "
                                    f"({', '.join(sorted(CLUSTER_FIXTURES & fixtures))}): its place is "
                                    "test/cluster (make test-cluster), not test/integration")


def pytest_xdist_make_scheduler(config, log):
    """Lanes get whole modules (a module's fixtures start its gateway and consumer once)."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return nodeid.split("::", 1)[0]

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
    redis = request.getfixturevalue("redis") if "services" in used else None
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
