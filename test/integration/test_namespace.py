"""make test runs on stacks of its own, never on one that `make run` or `make up` started.

With the demo's stack up, a suite sharing its consumer group would lose its orders to the
demo's consumer, a chaos scenario would restart the demo's Kafka, and every run would leave
coupons and activities in the demo's database. The suite's base configuration is
conf/seckill.conf followed by test/conf/namespace.conf (build/conf/test.conf), and its
cluster is conf/cluster.conf followed by test/conf/cluster-namespace.conf
(build/conf/test-cluster.conf): these tests check that every resource they name differs
from the demo's, that no two of the five stacks share a port or a data directory, and that
the services the suite talks to really are the ones kept in the test stack's data
directory."""

import itertools
import os
from pathlib import Path

import pytest

from stack import ROOT, conf_of

DEMO_CONF = ROOT / "conf" / "seckill.conf"
DEMO_CLUSTER_CONF = ROOT / "conf" / "cluster.conf"
TEST_CLUSTER_CONF = ROOT / "build" / "conf" / "test-cluster.conf"
TEST_CONF = ROOT / "build" / "conf" / "test.conf"
TEST_CONF_2 = ROOT / "build" / "conf" / "test-2.conf"
NAMESPACES = [ROOT / "test" / "conf" / name for name in ("namespace.conf", "namespace-2.conf", "cluster-namespace.conf")]

# Everything through which two stacks on one machine could meet.
RESOURCES = [
    "stack.data-dir", "http.port", "redis.port", "kafka.brokers", "kafka.topic",
    "kafka.dead-letter-topic", "kafka.outcome-topic", "mysql.port", "mysql.database", "consumer.group-id",
    "consumer.metrics-port",
]
# A cluster stack's Redis is a Redis Cluster: its nodes are a resource of their own.
CLUSTER_RESOURCES = RESOURCES + ["redis.nodes"]
REDIS_BUS_OFFSET = 100  # a node's cluster bus port (scripts/redis-cluster.sh)


def keys_of(path):
    keys = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keys.append(line.split("=", 1)[0].strip())
    return keys


def ports(conf):
    """Every TCP port the stack of `conf` listens on."""
    found = {conf.get_int("http.port"), conf.get_int("redis.port"), conf.get_int("mysql.port")}
    for broker in conf.get("kafka.brokers").split(","):
        port = int(broker.rpartition(":")[2])
        found |= {port, port + 1}  # the controller listens one above (scripts/kafka.sh)
    for node in filter(None, conf.get("redis.nodes").split(",")):
        port = int(node.rpartition(":")[2])
        found |= {port, port + REDIS_BUS_OFFSET}
    metrics = conf.get_int("consumer.metrics-port")
    if metrics:
        found |= {metrics + i for i in range(conf.get_int("stack.consumers"))}
    return found


@pytest.mark.parametrize("namespace", NAMESPACES, ids=lambda p: p.name)
def test_the_namespace_file_sets_every_resource_and_nothing_else(namespace):
    expected = CLUSTER_RESOURCES if namespace.name.startswith("cluster") else RESOURCES
    assert sorted(keys_of(namespace)) == sorted(expected)


def test_every_resource_of_the_test_stacks_differs_from_the_demos(base_conf):
    for test, demo, resources in ((base_conf, conf_of(DEMO_CONF), RESOURCES),
                                  (conf_of(TEST_CONF), conf_of(DEMO_CONF), RESOURCES),
                                  (conf_of(TEST_CONF_2), conf_of(DEMO_CONF), RESOURCES),
                                  (conf_of(TEST_CLUSTER_CONF), conf_of(DEMO_CLUSTER_CONF), CLUSTER_RESOURCES)):
        same = {k: demo.get(k) for k in resources if test.get(k) == demo.get(k)}
        assert not same, f"{test.path} shares these with {demo.path}: {same}"


def test_no_two_stacks_share_a_port_or_a_data_directory(base_conf):
    stacks = [conf_of(p) for p in {base_conf.path.resolve(), TEST_CONF, TEST_CONF_2, TEST_CLUSTER_CONF, DEMO_CONF, DEMO_CLUSTER_CONF}]
    for a, b in itertools.combinations(stacks, 2):
        assert not ports(a) & ports(b), f"{a.path} and {b.path} share ports {ports(a) & ports(b)}"
        assert a.data_dir(ROOT).resolve() != b.data_dir(ROOT).resolve(), (a.path, b.path)


def pid_in(path):
    return int(Path(path).read_text().strip())


def test_the_services_under_test_are_the_test_stacks(base_conf, redis, mysql):
    data = base_conf.data_dir(ROOT).resolve()
    assert data != conf_of(DEMO_CONF).data_dir(ROOT).resolve()

    info = redis("INFO", "server")
    process_id = int(next(line.split(":", 1)[1] for line in info.splitlines()
                          if line.startswith("process_id:")))
    assert process_id == pid_in(data / "redis" / "redis.pid")

    datadir = Path(mysql.scalar("SELECT @@datadir")).resolve()
    assert datadir == (data / "mariadb" / "data").resolve()
    assert mysql.scalar("SELECT DATABASE()") == base_conf.get("mysql.database")

    kafka_pid = pid_in(data / "kafka" / "kafka.pid")
    cmdline = Path(f"/proc/{kafka_pid}/cmdline").read_bytes().split(b"\0")
    assert os.fsencode(data / "kafka" / "server.properties") in cmdline
    broker_port = base_conf.get("kafka.brokers").split(",")[0].rpartition(":")[2]
    properties = (data / "kafka" / "server.properties").read_text(encoding="utf-8")
    assert f":{broker_port}" in properties
