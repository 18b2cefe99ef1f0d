"""The tests' cluster (TOPOLOGY=cluster, build/conf/test-cluster.conf: a Redis Cluster of 3
masters with 2 replicas each, three Kafka nodes, MariaDB) from the cluster suite's side
(test/cluster): the stack's scripts, its sales through the shared port, its Redis Cluster
node by node, and a master's failover and fail-back.

test/cluster/conftest.py builds the `cluster` fixture on Cluster; the modules there import
the rest from here."""

import http.client
import json
import os
import re
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor

from mariadb import MySQL
from resp import Redis, RedisError
from sales import Ctl
from stack import CLUSTER_UP_TIMEOUT, ROOT, poll_until

UP_TIMEOUT = CLUSTER_UP_TIMEOUT
# The admin API (seckill-admin) is on in this stack: make up starts it, make status lists it.
ADMIN_TOKEN = "cluster-admin-token-0123456789abcdef0123"
NODE_BITS_SHIFT = 12  # order number: 41 bits of time, 10 of node, 12 of sequence
FAILOVER_S = 60


class Cluster:
    def __init__(self, conf, env):
        self.conf, self.env = conf, env
        self.data = conf.data_dir(ROOT)
        self.ctl = Ctl(conf)
        self.mysql = MySQL(conf)
        self.port = conf.get_int("http.port")

    def sh(self, script, *args, timeout=120):
        return subprocess.run(["bash", str(ROOT / "scripts" / script), *args], cwd=ROOT,
                              env=self.env, capture_output=True, text=True, timeout=timeout)

    def kafka_pid(self, node):
        d = self.data / ("kafka" if node == 1 else f"kafka-{node}")
        return int((d / "kafka.pid").read_text().strip())

    def describe(self):
        p = self.sh("kafka.sh", "topics")
        assert p.returncode == 0, p.stdout + p.stderr
        return p.stdout

    def leaders(self, topic):
        """Partition -> leader node of `topic`."""
        found = {}
        for m in re.finditer(rf"Topic: {re.escape(topic)}\tPartition: (\d+)\tLeader: (-?\d+)", self.describe()):
            found[int(m.group(1))] = int(m.group(2))
        return found

    def execute(self, user, activity):
        """One request on its own connection, so that the kernel picks a gateway for each."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            c.request("POST", f"/seckill/execute?userId={user}&activityId={activity}")
            r = c.getresponse()
            return r.status, json.loads(r.read() or b"{}")
        finally:
            c.close()

    def sale(self, users, activity):
        with ThreadPoolExecutor(8) as pool:
            return list(pool.map(lambda u: self.execute(u, activity), users))

    def rows(self, activity):
        return self.mysql.count(f"SELECT COUNT(*) FROM seckill_order WHERE activity_id = {activity}")

    def verified(self, activity, within=30):
        """Waits for `seckillctl verify` of `activity` to pass and returns its report. An
        order's row reaches MariaDB a moment before the consumer's finalize makes it SUCCESS
        in Redis, and a verify run in between reports that disagreement; one that lasts
        `within` seconds fails the test with verify's last report."""
        last = {}

        def passes():
            last["report"] = self.ctl("verify", activity)
            return last["report"] if last["report"].rc == 0 else None

        return poll_until(passes, within, f"verify of {activity} to pass", detail=lambda: repr(last["report"]))

    # ---- the Redis Cluster, node by node (redis.nodes) ----

    def redis_nodes(self):
        return [Redis(h, int(p)) for h, _, p in (a.rpartition(":") for a in self.conf.get("redis.nodes").split(","))]

    def live_node(self):
        """The first node of redis.nodes that answers (one may have been killed)."""
        for node in self.redis_nodes():
            try:
                node("PING")
                return node
            except OSError:
                continue
        raise AssertionError("no node of redis.nodes answers")

    def masters(self):
        """Node id -> client of each master, from CLUSTER NODES."""
        found = {}
        for line in self.live_node()("CLUSTER", "NODES").splitlines():
            node_id, addr, flags = line.split()[:3]
            if "master" in flags.split(",") and "fail" not in flags:
                host, _, port = addr.split("@")[0].rpartition(":")
                found[node_id] = Redis(host, int(port))
        return found

    def owner(self, activity):
        """The node id of the master serving activity's slot."""
        node = self.live_node()
        slot = node("CLUSTER", "KEYSLOT", f"{{{activity}}}")
        for first, last, master, *_ in node("CLUSTER", "SLOTS"):
            if first <= slot <= last:
                return master[2]
        raise AssertionError(f"slot {slot} has no master")

    def migrate_slot(self, activity, to, finish=True):
        """Moves activity's slot to master `to` the way redis-cli --cluster reshard does:
        IMPORTING and MIGRATING, every key MIGRATEd; with finish, SETSLOT NODE everywhere."""
        masters = self.masters()
        src_id = self.owner(activity)
        src, dst = masters[src_id], masters[to]
        slot = src("CLUSTER", "KEYSLOT", f"{{{activity}}}")
        dst("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
        src("CLUSTER", "SETSLOT", slot, "MIGRATING", to)
        while keys := src("CLUSTER", "GETKEYSINSLOT", slot, 1000):
            src("MIGRATE", dst.addr[0], dst.addr[1], "", 0, 5000, "KEYS", *keys)
        if finish:
            self.finish_migration(slot, to)
        return slot

    def finish_migration(self, slot, to):
        for node in self.masters().values():
            node("CLUSTER", "SETSLOT", slot, "NODE", to)


def sales_on_different_masters(cluster, count, stock):
    """`count` sales whose slots are served by `count` different masters."""
    by_master = {}
    for _ in range(40):
        sale = cluster.ctl.create_sale(stock=stock)
        by_master.setdefault(cluster.owner(sale.activity_id), sale)
        if len(by_master) == count:
            return list(by_master.values())
    raise AssertionError(f"40 activities landed on only {len(by_master)} masters")


def node_pid(cluster, client):
    return int((cluster.data / "redis-cluster" / str(client.addr[1]) / "redis.pid").read_text().strip())


def replicas_of(cluster, master_id):
    """Clients of the live replicas of master_id, from CLUSTER NODES."""
    found = []
    for line in cluster.live_node()("CLUSTER", "NODES").splitlines():
        fields = line.split()
        if fields[3] == master_id and "slave" in fields[2] and "fail" not in fields[2]:
            host, _, port = fields[1].split("@")[0].rpartition(":")
            found.append(Redis(host, int(port)))
    return found


# ---- a master's failover (test_redis_failover.py, test_longpoll_cluster.py) ---------------


class Shard:
    """The master serving one activity's slot, and its replicas (replica_id: the one a
    failover here promotes)."""

    def __init__(self, cluster, activity):
        self.cluster = cluster
        self.master_id = cluster.owner(activity)
        self.nodes = {}    # node id -> (host, port)
        self.replica_ids = []
        for line in cluster.redis_nodes()[0]("CLUSTER", "NODES").splitlines():
            node_id, addr, flags, master = line.split()[:4]
            host, _, port = addr.split("@")[0].rpartition(":")
            self.nodes[node_id] = (host, int(port))
            if master == self.master_id and "fail" not in flags:
                self.replica_ids.append(node_id)
        assert self.replica_ids, f"master {self.master_id} has no live replica"
        self.replica_id = self.replica_ids[0]

    def client(self, node_id):
        return Redis(*self.nodes[node_id], timeout=5)

    def pid(self, node_id):
        port = self.nodes[node_id][1]
        return int((self.cluster.data / "redis-cluster" / str(port) / "redis.pid").read_text().strip())

    def role(self, node_id):
        try:
            return self.client(node_id)("ROLE")[0]
        except (OSError, ConnectionError, RedisError):
            return None

    def loaded(self, node_id):
        """Up and done loading its AOF: ROLE answers while loading, most commands do not."""
        try:
            info = self.client(node_id)("INFO", "persistence")
            return "loading:0" in info.split()  # a line of its own: async_loading:0 is another
        except (OSError, ConnectionError, RedisError):
            return False


def node_healthy(cluster):
    """Every node answers cluster_state:ok with every slot served, every replica's link up."""
    for node in cluster.redis_nodes():
        try:
            info = node("CLUSTER", "INFO")
            repl = node("INFO", "replication")
        except (OSError, ConnectionError, RedisError):
            return False
        if "cluster_state:ok" not in info or "cluster_slots_ok:16384" not in info:
            return False
        if "role:slave" in repl and "master_link_status:up" not in repl:
            return False
    return True


def fail_over(shard, replica_behind=False):
    """kill -9 of the shard's master, its replica takes over, the killed node is restarted
    and rejoins as the new master's replica. Returns the (old master, new master) ids.

    replica_behind: the replicas are SIGSTOPped and one must take over without what they
    missed. Resuming them would not do: the kernel already holds the master's replication
    stream in their sockets, and they would apply it. So they are killed too, the one to
    take over started again from its own AOF, which ends where it stopped, and the others
    by redis-cluster.sh start below, after the takeover (they resync from the new master)."""
    old, new = shard.master_id, shard.replica_id
    os.kill(shard.pid(old), signal.SIGKILL)
    poll_until(lambda: shard.role(old) is None, 10, "the killed master gone")
    if replica_behind:
        for replica in shard.replica_ids:
            os.kill(shard.pid(replica), signal.SIGKILL)
            poll_until(lambda: shard.role(replica) is None, 10, "the stopped replica gone")
        conf = shard.cluster.data / "redis-cluster" / str(shard.nodes[new][1]) / "redis.conf"
        subprocess.run(["redis-server", str(conf)], check=True, capture_output=True, timeout=30)
        poll_until(lambda: shard.loaded(new), 30, "the replica restarted and its AOF loaded")
    shard.client(new)("CLUSTER", "FAILOVER", "TAKEOVER")
    poll_until(lambda: shard.role(new) == "master", FAILOVER_S, "the replica promoted")
    p = shard.cluster.sh("redis-cluster.sh", "start", timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    poll_until(lambda: shard.role(old) == "slave" and node_healthy(shard.cluster), FAILOVER_S,
               "the killed master back as a replica, the cluster ok")
    return old, new


def fail_back(shard, old):
    """The original master serves its slots again (CLUSTER FAILOVER from its replica
    side), as the other tests' cluster expects."""
    if shard.role(old) == "master":
        return
    shard.client(old)("CLUSTER", "FAILOVER")
    poll_until(lambda: shard.role(old) == "master" and node_healthy(shard.cluster), FAILOVER_S,
               "the original master back")
