"""A Redis Cluster master failover in the middle of a sale, with and without
redis.wait-replicas (docs/protocol.md, "Redis failover").

Replication is asynchronous: a write a master answered may not be on its replicas yet. The
tests make that window as wide as they like by stopping the replicas (SIGSTOP: they neither
read the replication stream nor acknowledge it, so WAIT counts 0), then kill the master
(kill -9), let the replica take over (CLUSTER FAILOVER TAKEOVER, at once, instead of
waiting out cluster-node-timeout) and restart the killed node, which rejoins as a replica.

- wait-replicas = 1, replicas stopped: the execute is answered 503 with Retry-After and
  changes nothing (the reservation is rolled back, no order reaches Kafka).
- wait-replicas = 0, replicas stopped: two users' orders are persisted on the old master
  only; after the failover the promoted replica has never heard of them and sells the
  same user and the same units again. MySQL, the last line, keeps at most the stock and
  one row per user; the losers end FAILED in Redis without their unit coming back, and
  `seckillctl verify` passes.
- wait-replicas = 1, replicas healthy: the master is killed right after a burst of 200s;
  every one of them ends SUCCESS and nothing is oversold.

The module runs on the tests' cluster (build/conf/test-cluster.conf) with its own gateway
and consumer (ASan builds) in place of the stack's, so that each test picks its
wait-replicas; it leaves the cluster as it found it: every slot served by the original
masters, cluster_state:ok."""

import collections
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mariadb import MySQL

from sales import Ctl

from cluster import FAILOVER_S, UP_TIMEOUT, Cluster, Shard, fail_back, fail_over, node_healthy
from stack import CLUSTER_CONF, Consumer, Gateway, TEST_LIMITS, child_env, conf_of, free_port, poll_until
from gatewayhttp import Api
from resp import redis_client


class Stack:
    """The tests' cluster services (Redis Cluster, Kafka, MariaDB) and, on top of them,
    one gateway and one consumer of this module with the wait-replicas a test asks for."""

    def __init__(self, tmp):
        self.env = dict(child_env(), CONF=str(CLUSTER_CONF))
        self.cluster = Cluster(conf_of(CLUSTER_CONF), self.env)
        self.tmp = Path(tmp)
        self.conf = None
        self.gateway = self.consumer = None
        self.runs = 0

    def start(self, wait_replicas):
        self.stop()
        self.runs += 1
        d = self.tmp / f"run{self.runs}"
        d.mkdir()
        overrides = dict(TEST_LIMITS)
        overrides.update({"http.port": str(free_port()), "consumer.metrics-port": str(free_port()),
                          "redis.wait-replicas": str(wait_replicas)})
        text = CLUSTER_CONF.read_text(encoding="utf-8").rstrip("\n")
        text += "\n\n# --- test_redis_failover ---\n" + "".join(f"{k} = {v}\n" for k, v in overrides.items())
        (d / "seckill.conf").write_text(text, encoding="utf-8")
        self.conf = conf_of(d / "seckill.conf")
        self.consumer = Consumer(self.conf, d).start(timeout=60)
        self.gateway = Gateway(self.conf, d).start(timeout=60)
        self.api = Api(self.gateway.base_url)
        self.ctl = Ctl(self.conf)
        self.mysql = MySQL(self.conf)
        self.redis = redis_client(self.conf)

    def stop(self):
        if self.gateway:
            self.gateway.finish(timeout=40)
        if self.consumer:
            self.consumer.finish(timeout=40)
        self.gateway = self.consumer = None

    def rows(self, activity):
        return {no: int(user) for no, user in self.mysql.rows(
            f"SELECT order_no, user_id FROM seckill_order WHERE activity_id = {activity}")}

    def statuses(self, activity):
        pairs = self.redis("HGETALL", self.conf.key("orders", activity))
        return dict(zip(pairs[::2], pairs[1::2]))

    def holder(self, activity, user):
        return self.redis("HGET", self.conf.key("users", activity), str(user))

    def stock(self, activity):
        return int(self.redis("GET", self.conf.key("stock", activity)))

    def stock_read(self, activity):
        """The stock the gateway reads (GET /seckill/stock), None while it cannot."""
        r = self.api.get(f"/seckill/stock/{activity}")
        return r["stock"] if r.code == 200 else None

    def buy(self, users, activity):
        with ThreadPoolExecutor(8) as pool:
            return list(pool.map(lambda u: (u, self.api.execute(u, activity)), users))


@pytest.fixture(scope="module")
def stack(cluster_services, tmp_path_factory):
    s = Stack(tmp_path_factory.mktemp("failover"))
    try:
        # Starts again whatever a module before this one left stopped.
        p = s.cluster.sh("stack.sh", "up", "--services-only", timeout=UP_TIMEOUT)
        assert p.returncode == 0, f"stack.sh up failed:\n{p.stdout}\n{p.stderr}"
        yield s
    finally:
        s.stop()


@pytest.fixture
def stopped_replica():
    """SIGSTOP of a replica, always undone."""
    stopped = []

    def stop(pid):
        os.kill(pid, signal.SIGSTOP)
        stopped.append(pid)

    yield stop
    for pid in stopped:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def settled(stack, activity, orders):
    """Every order of `orders` final in Redis."""
    st = stack.statuses(activity)
    return all(st.get(no) in ("SUCCESS", "FAILED") for no in orders)


def test_wait_refuses_what_no_replica_holds(stack, stopped_replica, ids):
    stack.start(wait_replicas=1)
    sale = stack.ctl.create_sale(stock=3)
    shard = Shard(stack.cluster, sale.activity_id)
    for replica in shard.replica_ids:
        stopped_replica(shard.pid(replica))
    user = ids()
    t0 = time.monotonic()
    r = stack.api.execute(user, sale.activity_id)
    took = time.monotonic() - t0
    assert r.code == 503 and r.status == "UNAVAILABLE", repr(r)
    assert r.headers.get("Retry-After") == "1", r.headers
    assert took < stack.conf.get_int("http.request-timeout-ms") / 1000, took
    # Nothing reserved: the stock and the user as before.
    assert stack.stock(sale.activity_id) == 3
    assert stack.holder(sale.activity_id, user) is None
    for replica in shard.replica_ids:
        os.kill(shard.pid(replica), signal.SIGCONT)
    # Nothing reached Kafka: once a later order is through, MySQL holds that one alone.
    poll_until(lambda: node_healthy(stack.cluster), FAILOVER_S, "the replica back in sync")
    other = ids()
    r = stack.api.execute(other, sale.activity_id)
    assert r.code == 200, repr(r)
    poll_until(lambda: stack.statuses(sale.activity_id).get(r["orderNo"]) == "SUCCESS", 60,
               "the later order persisted")
    assert list(stack.rows(sale.activity_id).values()) == [other]
    assert stack.ctl("verify", sale.activity_id).rc == 0


def test_without_wait_a_failover_resells_and_mysql_keeps_the_stock(stack, stopped_replica, ids):
    stock = 4
    stack.start(wait_replicas=0)
    sale = stack.ctl.create_sale(stock=stock)
    a = sale.activity_id
    shard = Shard(stack.cluster, a)
    for replica in shard.replica_ids:
        stopped_replica(shard.pid(replica))
    # Two orders the replica never sees, persisted from the old master.
    u, v = ids(), ids()
    first = {}
    for user in (u, v):
        r = stack.api.execute(user, a)
        assert r.code == 200, repr(r)
        first[user] = r["orderNo"]
    poll_until(lambda: set(stack.rows(a)) == set(first.values()), 60, "both orders in MySQL")

    old, new = fail_over(shard, replica_behind=True)
    try:
        # The promoted replica never saw either: the same user buys again, and the whole
        # stock is on sale once more.
        poll_until(lambda: stack.stock_read(a) == stock, 30, "the gateway reading the new master")
        r = stack.api.execute(u, a)
        assert r.code == 200, repr(r)
        again = r["orderNo"]
        others = stack.buy([ids() for _ in range(stock + 2)], a)
        accepted = {r["orderNo"]: user for user, r in others if r.code == 200}
        assert len(accepted) == stock - 1, others
        everything = set(first.values()) | {again} | set(accepted)
        poll_until(lambda: settled(stack, a, everything), 90, "every order final in Redis")

        rows = stack.rows(a)
        # The last line: never more rows than the stock, never two of one user.
        assert len(rows) == stock, rows
        assert len(set(rows.values())) == len(rows), rows
        st = stack.statuses(a)
        # The user's second order lost to the first one MySQL holds: FAILED, and the
        # user's record points at the winner, which shows SUCCESS.
        assert rows.get(first[u]) == u and again not in rows, rows
        assert st[again] == "FAILED" and st[first[u]] == "SUCCESS", st
        assert stack.holder(a, u) == first[u]
        assert st[first[v]] == "SUCCESS", st
        # One of the others was told 200 for a unit MySQL had sold already: the loss
        # wait-replicas = 0 allows. It ends FAILED, its unit not back on sale.
        lost = [no for no in accepted if no not in rows]
        assert len(lost) == 1 and st[lost[0]] == "FAILED", (lost, st)
        assert all(st[no] == "SUCCESS" for no in rows), st
        assert stack.stock(a) == 0
        r = stack.ctl("verify", a)
        assert r.rc == 0, repr(r)
    finally:
        fail_back(shard, old)


def test_with_wait_every_200_survives_a_failover(stack, ids):
    stock = 20
    stack.start(wait_replicas=1)
    sale = stack.ctl.create_sale(stock=stock)
    a = sale.activity_id
    shard = Shard(stack.cluster, a)
    answers = stack.buy([ids() for _ in range(stock // 2)], a)
    accepted = {r["orderNo"] for _, r in answers if r.code == 200}
    assert len(accepted) == stock // 2, answers
    old, _ = fail_over(shard)
    try:
        # The rest of the sale on the promoted replica: it knows every reservation.
        poll_until(lambda: stack.stock_read(a) == stock - len(accepted), 30, "the gateway reading the new master")
        more = stack.buy([ids() for _ in range(stock)], a)
        statuses = collections.Counter(r.code for _, r in more)
        accepted |= {r["orderNo"] for _, r in more if r.code == 200}
        assert set(statuses) <= {200, 409}, statuses
        poll_until(lambda: settled(stack, a, accepted), 90, "every accepted order final")
        st = stack.statuses(a)
        assert {no: st[no] for no in accepted} == {no: "SUCCESS" for no in accepted}
        rows = stack.rows(a)
        assert set(rows) == accepted and len(rows) <= stock, (len(rows), len(accepted))
        r = stack.ctl("verify", a)
        assert r.rc == 0, repr(r)
    finally:
        fail_back(shard, old)
