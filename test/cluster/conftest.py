"""Fixtures of the cluster suite (make test-cluster, scripts/test-cluster.sh).

The modules here run on the tests' cluster (build/conf/test-cluster.conf: conf/cluster.conf
+ test/conf/cluster-namespace.conf; a Redis Cluster of three masters with two replicas
each, three Kafka nodes, MariaDB), with the environment of the integration suite
(test/integration/conftest.py: SECKILL_ROOT, SECKILL_BIN, SECKILL_CONF). Its services come
up once for the whole run (cluster_services, session-scoped) and go down after the last
test; `cluster` adds the processes `make up TOPOLOGY=cluster` starts on top of them, for one
module at a time. Every test here is marked `cluster`; the single-stack suite
(test/integration) has neither fixture and refuses a module that asks for one.

The shared helpers are in test/lib (cluster.py, longpoll.py, sharedfixtures.py), never in
another test module.
"""

from pathlib import Path

import pytest

import sharedfixtures
import strictoutcomes
from cluster import ADMIN_TOKEN, UP_TIMEOUT, Cluster
from stack import (BIN, CLUSTER_CONF, CLUSTER_UP_TIMEOUT, ROOT, TEST_LIMITS, child_env, cluster_sh, conf_of,
                   free_port)

# Registered here as this conftest's own (test/lib/sharedfixtures.py says why they live there).
ids = sharedfixtures.ids  # a fixture: fresh user ids
pytest_runtest_makereport = strictoutcomes.pytest_runtest_makereport  # a hook: xpass fails

HERE = Path(__file__).resolve().parent
# Fixtures that reach running services: a test whose fixtures reach none of them is not
# marked `stack` (-m "not stack" selects the tests that need no service).
STACK_FIXTURES = {"cluster_services"}


def pytest_collection_modifyitems(config, items):
    """Marks every test here `cluster`, and those that reach the cluster `stack` too (only
    the tests under this directory: a run of test/integration beside it has its own)."""
    for item in items:
        if not item.path.resolve().is_relative_to(HERE):
            continue
        item.add_marker(pytest.mark.cluster)
        if STACK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.stack)


@pytest.fixture(scope="session")
def cluster_services():
    """The tests' cluster services (a Redis Cluster of three masters with two replicas each,
    three Kafka nodes, MariaDB), up once for every module here, and down after the last. A
    module starts what it runs on top of them and leaves them healthy; an `up` at the start
    of a module starts again whatever a module before it left stopped. Returns the
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
def cluster(cluster_services):
    """The whole cluster stack as `make up TOPOLOGY=cluster` starts it: the session's
    cluster services (started again where a module before stopped one) plus two gateways,
    two consumers and seckill-admin of this module, stopped again after it."""
    env = dict(cluster_services)
    # The suite's relaxed limits (all its clients are 127.0.0.1), as SECKILL_<KEY> overrides.
    env.update({"SECKILL_" + k.upper().replace(".", "_").replace("-", "_"): v for k, v in TEST_LIMITS.items()})
    env.update(SECKILL_ADMIN_PORT=str(free_port()), SECKILL_ADMIN_TOKEN=ADMIN_TOKEN)
    c = Cluster(conf_of(CLUSTER_CONF), env)
    try:
        p = c.sh("stack.sh", "up", timeout=UP_TIMEOUT)
        assert p.returncode == 0, f"stack.sh up failed:\n{p.stdout}\n{p.stderr}"
        yield c
    finally:
        p = c.sh("stack.sh", "down", "--apps-only", timeout=180)
        assert p.returncode == 0, f"stack.sh down --apps-only failed:\n{p.stdout}\n{p.stderr}"
        for name in ("seckill-server-1", "seckill-server-2", "order-consumer-1", "order-consumer-2", "seckill-admin"):
            path = c.data / "log" / f"{name}.log"
            log = path.read_text(errors="replace") if path.exists() else ""
            assert "ERROR: AddressSanitizer" not in log and "runtime error:" not in log, f"{name}: {log[-3000:]}"
