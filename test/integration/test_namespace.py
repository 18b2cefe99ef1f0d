"""make test runs on a stack of its own, never on the one `make run` or `make up` started.

With the demo's stack up, a suite sharing its consumer group would lose its orders to the
demo's consumer, a chaos scenario would restart the demo's Kafka, and every run would leave
coupons and activities in the demo's database. The suite's base configuration is
conf/seckill.conf followed by test/conf/namespace.conf (build/conf/test.conf): these tests
check that every resource it names differs from the demo's, and that the services the
suite talks to really are the ones kept in the test stack's data directory."""

import os
from pathlib import Path

from conftest import ROOT, conf_of

DEMO_CONF = ROOT / "conf" / "seckill.conf"
NAMESPACE = ROOT / "test" / "conf" / "namespace.conf"

# Everything through which two stacks on one machine could meet.
RESOURCES = [
    "stack.data-dir", "http.port", "redis.port", "kafka.brokers", "kafka.topic",
    "kafka.dead-letter-topic", "mysql.port", "mysql.database", "consumer.group-id",
    "consumer.metrics-port",
]


def namespace_keys():
    keys = []
    for line in NAMESPACE.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keys.append(line.split("=", 1)[0].strip())
    return keys


def test_the_namespace_file_sets_every_resource_and_nothing_else():
    assert sorted(namespace_keys()) == sorted(RESOURCES)


def test_every_resource_of_the_test_stack_differs_from_the_demo(base_conf):
    demo = conf_of(DEMO_CONF)
    same = {k: demo.get(k) for k in RESOURCES if base_conf.get(k) == demo.get(k)}
    assert not same, f"the suite's {base_conf.path} shares these with the demo: {same}"
    assert base_conf.data_dir(ROOT).resolve() != demo.data_dir(ROOT).resolve()
    # The Kafka controller listens one port above the broker (scripts/kafka.sh).
    test_port = int(base_conf.get("kafka.brokers").split(",")[0].rpartition(":")[2])
    demo_port = int(demo.get("kafka.brokers").split(",")[0].rpartition(":")[2])
    assert abs(test_port - demo_port) > 1


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
