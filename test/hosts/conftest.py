"""The hosts topology's tests (make test-hosts): scripts/hosts.sh brings it up once for the
session, on a configuration and a data directory of its own (build/hosts-test/,
var/hosts-test), with the integration tests' relaxed limits (every client of a sale comes
from the one client namespace) and the short timeouts of the chaos suite's cluster
scenarios (PARTITION_SETTINGS, for test_partitions.py); the last test brings it down and
checks that no namespace, veth or bridge is left, and the session's end brings it down
whatever happened. Root only: it makes network namespaces.

SECKILL_HOSTS_KEEP=1 (while working on a scenario, never in make test-hosts): a topology
that is up is used as it is, and the session leaves it up; `make down TOPOLOGY=hosts
CONF=build/hosts-test/hosts.conf` removes it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import stack as stacklib

# The chaos suite's machinery (chaoslib, chaosload, chaosredis) runs the partition
# scenarios too. Appended, not prepended: `conftest` must stay this directory's.
sys.path.append(str(Path(__file__).resolve().parents[1] / "chaos"))
import chaoslib  # noqa: E402

ROOT = stacklib.ROOT
BIN = stacklib.BIN
DIR = ROOT / "build" / "hosts-test"
CONF = DIR / "hosts.conf"
EXTRA = DIR / "extra.conf"
DATA = ROOT / "var" / "hosts-test"
KEEP = os.environ.get("SECKILL_HOSTS_KEEP") == "1"
PARTITION_RESULTS = []      # test_partitions.py's rows, for the table at the session's end

# The chaos suite's timeouts, so that a partition plays out in seconds (chaoslib.CHAOS_CONF
# says why each), with its topic and group left to the topology (a stack of its own), and
# what its cluster scenarios change (test_chaos_cluster.py, WAIT and CLUSTER): every write
# an accepted order depends on waits for one replica, redis.timeout-ms is the shipped
# 1000, the request timeout holds the chain 2500 + 1000 + 1000 + 250, node leases keep
# the shipped 10 s (a promotion outlasts a 3 s one), and the generator's idle keep-alive
# connections are not closed by the header timeout.
PARTITION_SETTINGS = {k: v for k, v in chaoslib.CHAOS_CONF.items()
                      if k not in ("kafka.topic", "kafka.dead-letter-topic", "consumer.group-id")}
PARTITION_SETTINGS.update({
    "redis.wait-replicas": "1",
    "redis.wait-timeout-ms": "250",
    "redis.timeout-ms": "1000",
    "http.request-timeout-ms": "4750",
    "seckill.node-lease-ms": "10000",
    "http.header-timeout-ms": "180000",
})


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.stack)


def leftovers():
    """The sk-* namespaces, skv-* veths and the bridge that exist."""
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    ns = [line.split()[0] for line in listing.splitlines() if line.startswith("sk-")]
    links = []
    for line in subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith("skv-") or name == "skbr0":
            links.append(name)
    return ns + links


class Topology:
    def __init__(self):
        self.env = dict(stacklib.child_env(), HOSTS_CONF=str(CONF), HOSTS_EXTRA=str(EXTRA),
                        STACK_BIN_DIR=str(BIN))
        self.down_done = False
        self.bin = BIN

    def sh(self, *args, timeout=600):
        p = subprocess.run(["bash", str(ROOT / "scripts" / "hosts.sh"), *args], env=self.env, cwd=ROOT,
                           capture_output=True, text=True, timeout=timeout)
        return p.returncode, (p.stdout + p.stderr).strip()

    def up(self):
        DIR.mkdir(parents=True, exist_ok=True)
        limits = dict(stacklib.TEST_LIMITS)
        limits.update(PARTITION_SETTINGS)
        limits["stack.data-dir"] = str(DATA.relative_to(ROOT))
        EXTRA.write_text("".join(f"{k} = {v}\n" for k, v in limits.items()), encoding="utf-8")
        rc, out = self.sh("up")
        if rc != 0:
            pytest.fail(f"scripts/hosts.sh up failed ({rc}):\n{out[-4000:]}")
        self.conf = stacklib.conf_of(CONF)
        self.map = {}        # namespace -> (address, role, index)
        for line in (DATA / "netns.map").read_text().splitlines():
            w = line.split()
            self.map[w[1]] = (w[0], w[2] if len(w) > 2 else None, int(w[3]) if len(w) > 3 else None)
        return out

    def addr(self, ns):
        return self.map[ns][0]

    def down(self):
        rc, out = self.sh("down")
        self.down_done = True
        return rc, out


@pytest.fixture(scope="session")
def topology():
    if os.geteuid() != 0:
        pytest.fail("the hosts topology needs root (network namespaces)")
    there = leftovers()
    if there and not KEEP:
        pytest.fail(f"a hosts topology is up already ({', '.join(there[:4])}...): make down TOPOLOGY=hosts")
    topo = Topology()
    try:
        topo.up()
        yield topo
    finally:
        if not KEEP and (not topo.down_done or leftovers()):
            topo.down()


def pytest_terminal_summary(terminalreporter):
    chaoslib.terminal_summary(terminalreporter, "partitions", PARTITION_RESULTS)
