"""Partitions under load on the hosts topology (issue 28, item 2; docs/chaos.md, "Partitions
on the hosts topology"). Each scenario is a chaos scenario (test/chaos/chaoslib.py run()
does the load, the quiescence and the checks, as for make chaos): a sale under load from
the client namespace over both gateways, one network partition (test/lib/netfault.py, nft
rules inside the namespaces) held for several seconds, longer than the timeouts it plays
against, then healed; then I1-I6, seckillctl verify, every order answered 200 ends SUCCESS
(Redis and MySQL), no order answered 503 ends SUCCESS, plus what each scenario says of its
fault. The gateways, consumers, Redis nodes, brokers and MariaDB are the topology's
(scripts/hosts.sh, each in its namespace), the timeouts conftest.PARTITION_SETTINGS.

Load: RATE requests a second from sk-client (bench/openloop, half to each gateway), more
than a quarter of the most this topology takes here. Measured once (2026-12-06, this
two-core machine, the topology's configuration of conftest.py, release binaries, nothing
else running): one openloop per gateway from sk-client, 512 connections each, 10 s, a sale
of 1,000,000 units (never sold out), offered 400, 800, then 1,200 a second to each:
800 and 1,600 a second were taken whole (every answer 200, p99 1.3 and 1.6 s); at 2,400
a second 21,979 answers 200 came in 10.6 s (2,070 a second; 2,021 requests skipped after
waiting 1 s for a free connection, p99 1.9 s). MAX_MEASURED is that 2,070.

The partitions, each held for longer than what it plays against:
  P1  a gateway cut off from the Redis master of the sale's slot (redis.timeout-ms 1 s,
      the request timeout 4.75 s, a node lease renewal every 3.3 s, the kernel's SYN
      retransmissions at 1, 3, 7 s): GW_CUT_S; it must sell again within SELL_AGAIN_S
  P2  the host of that Redis master cut off from everything (cluster-node-timeout 2 s: a
      replica is promoted; back, it must rejoin as a replica): HOST_CUT_S
  P2b the host of a gateway cut off from everything, its clients included: HOST_CUT_S
  P3  that master cut off from the other Redis nodes only, still reachable by the gateways
      and consumers: a minority master, which answers until it learns it lost the
      cluster; with redis.wait-replicas = 1 no write it takes then may be answered 200
  P4  the broker leading most partitions of the order topic cut off from the other
      brokers and one gateway, still reachable by the other (a zombie leader): HOST_CUT_S
  P5a a consumer cut off from MariaDB while it has a batch claimed: CONSUMER_CUT_S
  P5b a consumer cut off from every Redis node between a commit and its finalize:
      CONSUMER_CUT_S
"""

import collections
import os
import re
import time

import pytest

import chaoslib
import netfault
import stack as stacklib
from chaoslib import Scenario, accepted
from chaosredis import RedisCluster
from conftest import DATA, DIR, PARTITION_RESULTS
from mariadb import MySQL, RowLock
from netfault import Cut
from resp import RedisError, redis_client

MAX_MEASURED = 2070      # orders a second over both gateways (see above)
RATE = 600               # 29 % of it
GW_CUT_S = 10
HOST_CUT_S = 10
# A gateway cut off from a Redis node reconnects within a connect timeout and a backoff
# (redis.timeout-ms and redis.reconnect-max-ms, 1 s each) of the heal; before the fix of
# src/gateway/redisnode.c it waited for the kernel's next SYN retransmission, some 6 s
# after a 10 s cut.
SELL_AGAIN_S = 4
# P3: once the majority has promoted a replica, the gateways find it (the minority's
# CLUSTERDOWN triggers a map reload, from another node) within this.
PROMOTED_SELLS_S = 2
# P5: longer than the consumer's MySQL read timeout (5 s), its connect timeout (5 s),
# consumer.retry-max-ms and redis.timeout-ms.
CONSUMER_CUT_S = 12
PROMOTION_TIMEOUT = 30
# make chaos-hosts HOSTS_DELAY_US=N: the topology comes up with N us added each way between
# the gateways and the Redis nodes and brokers (scripts/hosts.sh delay), a link between
# machines of a datacenter (250) or of two zones (1000) instead of a bridge's some 30.
DELAY_US = int(os.environ.get("HOSTS_DELAY_US") or 0)
HEAL_TIMEOUT = 120


class Proc:
    """A gateway or consumer of the topology, started in its namespace by scripts/stack.sh:
    what chaoslib reads of one (its address, its pid, its log since the scenario began)."""

    def __init__(self, name, ns, host, conf):
        self.name, self.ns, self.host, self.conf = name, ns, host, conf
        self.log = DATA / "log" / f"{name}.log"
        self.pidfile = DATA / "run" / f"{name}.pid"
        self.base_url = f"http://{host}:{conf.http_port}"
        self.offset = self.log.stat().st_size if self.log.exists() else 0
        self.pid0 = self.pid

    @property
    def pid(self):
        try:
            return int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None

    @property
    def running(self):
        try:
            state = open(f"/proc/{self.pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except (OSError, TypeError):
            return False
        return state != "Z"

    def log_text(self, since_start=True):
        try:
            with open(self.log, "rb") as f:
                f.seek(self.offset if since_start else 0)
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def check(self):
        """(ok, detail): the same process ran the whole scenario, and its log of the
        scenario has no sanitizer report."""
        bad = [line for line in self.log_text().splitlines() if stacklib.SANITIZER_LINE.search(line)]
        if self.pid != self.pid0 or not self.running:
            return False, f"pid {self.pid0} at the start, now {self.pid} ({'running' if self.running else 'gone'})"
        if bad:
            return False, "sanitizer: " + " | ".join(bad[:5])
        return True, f"pid {self.pid} ran throughout, no sanitizer report"


class HostPlant:
    """chaoslib.run()'s gateways and consumers: the topology's own, which run on across
    scenarios; the load comes from sk-client to each gateway's address."""

    netns = "sk-client"

    def __init__(self, topo, sc, out):
        assert not sc.overrides, "the topology runs one configuration (conftest.PARTITION_SETTINGS)"
        self.topo, self.conf = topo, topo.conf
        self.gateways = [Proc(f"seckill-server-{i}", f"sk-gw{i}", topo.addr(f"sk-gw{i}"), self.conf)
                         for i in (1, 2)]
        self.consumers = [Proc(f"order-consumer-{i}", f"sk-cons{i}", topo.addr(f"sk-cons{i}"), self.conf)
                          for i in (1, 2)]

    def targets(self):
        return [(g.host, self.conf.http_port) for g in self.gateways]

    def start(self):
        """Every process up and the Redis Cluster whole before the load starts (what the
        previous scenario healed may still be resyncing)."""
        rc = RedisCluster(self.conf, None)
        stacklib.poll_until(lambda: rc.health()[0], HEAL_TIMEOUT, "the Redis Cluster whole", interval=0.5)
        for p in self.gateways + self.consumers:
            assert p.running, f"{p.name} is not running: {p.pid}"
        for g in self.gateways:
            stacklib.poll_until(lambda: stacklib.healthz_ok(g.conf.http_port, g.host), 30, f"{g.name} to answer /healthz")

    def finish(self):
        return [(f"{p.name} ran throughout", *p.check()) for p in self.gateways + self.consumers]


class HostStack(chaoslib.Stack):
    """The topology's services through the project's scripts; after a scenario, whatever
    happened, no cut is left in any namespace."""

    def __init__(self, topo):
        super().__init__(DIR / "hosts.conf")
        self.topo = topo

    def ns_of(self, addr):
        return next(ns for ns, (a, _, _) in self.topo.map.items() if a == addr)

    def ensure_up(self):
        for ns in self.topo.map:
            netfault.clear(ns)
        super().ensure_up()


@pytest.fixture(scope="module")
def partitions(topology):
    chaoslib.OUT = DIR / (f"partitions-{DELAY_US}us" if DELAY_US else "partitions")
    stack = HostStack(topology)
    redis, mysql = redis_client(topology.conf), MySQL(topology.conf)
    PARTITION_RESULTS.clear()

    def run(sc):
        chaoslib.run(sc, stack, redis, mysql, PARTITION_RESULTS,
                     plant=lambda sc, out: HostPlant(topology, sc, out))
    yield run
    stack.ensure_up()


# ---- what the faults share -----------------------------------------------------------------


def sale_master(ctx):
    rc = RedisCluster(ctx.conf, ctx.stack)
    slot = rc.slot(ctx.conf, ctx.a)
    master = rc.node_at(rc.owner(slot))
    return rc, slot, master


def part_of(ctx, gateway):
    return ctx.load.parts[ctx.gateways.index(gateway)]


def answered(part, code, t0, t1):
    return sum(1 for t in part.snapshot() if t.code == code and t0 <= t.done <= t1)


def wait_whole(ctx, rc, t_heal, what):
    """After the heal: until the Redis Cluster is whole (every node, replicas in sync);
    records how long that took, and the cluster's health as an expectation."""
    ok, detail = False, ""
    deadline = time.monotonic() + HEAL_TIMEOUT
    while time.monotonic() < deadline:
        try:
            ok, detail = rc.health()
        except (OSError, ConnectionError, RedisError) as e:
            ok, detail = False, str(e)
        if ok:
            break
        time.sleep(0.5)
    ctx.notes.append(f"{what}: Redis Cluster whole {time.monotonic() - t_heal:.1f} s after the heal"
                     if ok else f"{what}: Redis Cluster not whole {HEAL_TIMEOUT} s after the heal")
    ctx.expect.append(("Redis Cluster whole after the heal", ok, detail))
    ctx.heal_s = time.monotonic() - t_heal


def rejoined(ctx, rc, master, promoted, what):
    """After the heal: the old master `what` is a replica of the one promoted at `promoted`."""
    wait_whole(ctx, rc, ctx.t_recovered, "heal")
    back = rc.node_at(master.addr)
    ctx.expect.append((f"{what} rejoined as a replica of the promoted one",
                       not back.master and back.master_id == rc.node_at(promoted).id,
                       f"{master.addr[0]}: {'master' if back.master else 'replica'}"))


def cut_until_promoted(ctx, rc, slot, master, peers):
    """The sale's master's host cut off from `peers` (None: from all) for HOST_CUT_S, once
    one of its replicas is promoted; returns its namespace, the promoted node's address and
    how long after the cut it took over."""
    ns = ctx.stack.ns_of(master.addr[0])
    replicas = rc.replicas_of(master)
    ctx.fault_start()
    with Cut(ns, peers):
        addr, took = rc.wait_owner(slot, [r.addr for r in replicas], PROMOTION_TIMEOUT, skip={master.addr})
        # The rest of the partition is held on purpose: the scenario is its length.
        time.sleep(max(0.0, HOST_CUT_S - (time.monotonic() - ctx.t_fault)))
    ctx.fault_end()
    window_notes(ctx)
    return ns, addr, took


def window_notes(ctx):
    """Per gateway, what its clients got while the partition held."""
    for g in ctx.gateways:
        p = part_of(ctx, g)
        ctx.notes.append(f"{g.name} during the partition: {answered(p, 200, ctx.t_fault, ctx.t_recovered)} "
                         f"answered 200, {answered(p, 503, ctx.t_fault, ctx.t_recovered)} answered 503")


# ---- P1: a gateway cut off from the sale's master ------------------------------------------


def gateway_cut_from_master(ctx):
    """sk-gw2 drops every packet from and to the Redis master of the sale's slot for
    GW_CUT_S: its calls there time out (redis.timeout-ms) and it answers 503, or holds an
    answer whose rollback has no verdict until one comes; its clients, the other gateway and
    the rest of the cluster see nothing of it. sk-gw1 sells on throughout."""
    rc, slot, master = sale_master(ctx)
    cut_gw, other = ctx.gateways[1], ctx.gateways[0]
    ctx.fault_start()
    with Cut(cut_gw.ns, [master.addr[0]]):
        # The partition's length is the scenario: held, not polled for.
        time.sleep(GW_CUT_S)
    ctx.fault_end()
    sells_again(ctx, cut_gw)
    window_notes(ctx)
    ctx.notes.append(f"slot {slot} on {master}: {cut_gw.name} ({cut_gw.host}) cut off from it for {GW_CUT_S} s")
    n = accepted(part_of(ctx, other), ctx.t_fault + 1, ctx.t_recovered)
    ctx.expect.append((f"{other.name} sold on during the cut", n > 0, f"{n} orders accepted by it"))
    ctx.post_checks.append(lambda: gateway_back(ctx, cut_gw, SELL_AGAIN_S))


def sells_again(ctx, g):
    """The load goes on until the gateway cut off accepts an order again (bounded), so
    that how long that took is measured, not cut short by the end of the load."""
    part = part_of(ctx, g)
    deadline = time.monotonic() + HEAL_TIMEOUT
    while accepted(part, ctx.t_recovered) == 0 and time.monotonic() < deadline:
        time.sleep(0.1)


def gateway_back(ctx, g, within):
    p = part_of(ctx, g)
    first = min((t.done for t in p.snapshot() if t.code == 200 and t.sent >= ctx.t_recovered), default=None)
    ctx.expect.append((f"{g.name} sold again within {within} s of the heal",
                       first is not None and first - ctx.t_recovered <= within,
                       f"first order it accepted {first - ctx.t_recovered:.1f} s after the heal"
                       if first is not None else "none"))
    if first is not None:
        ctx.heal_s = first - ctx.t_recovered


# ---- P2: a Redis master's host cut off from everything -------------------------------------


def master_host_cut(ctx):
    """The host of the sale's master cut off from every other for HOST_CUT_S: the other
    nodes mark it failed after cluster-node-timeout and promote one of its replicas, which
    has every write WAIT acknowledged; the gateways' calls to it time out until their map
    names the promoted one. Back, it learns the newer epoch and rejoins as a replica of
    the promoted one, its own last writes (none acknowledged by a replica) dropped."""
    rc, slot, master = sale_master(ctx)
    ns, addr, took = cut_until_promoted(ctx, rc, slot, master, None)
    ctx.notes.append(f"slot {slot}: {master} ({ns}) cut off from all for {HOST_CUT_S} s; "
                     f"{addr[0]}:{addr[1]} promoted {took:.1f} s after the cut")
    rejoined(ctx, rc, master, addr, "the cut master")


# ---- P2b: a gateway's host cut off from everything -----------------------------------------


def gateway_host_cut(ctx):
    """sk-gw2 cut off from everything, its clients too, for HOST_CUT_S: requests on their
    way to it or in it get no answer the client could read before its timeout (those are
    the unanswered the check excuses, and only those: sent to sk-gw2 from a request
    timeout before the cut until the heal); its calls to Redis and Kafka time out and it
    rolls back what it can. sk-gw1 sells on throughout; back, sk-gw2 sells again."""
    cut_gw, other = ctx.gateways[1], ctx.gateways[0]
    part = part_of(ctx, cut_gw)
    ctx.fault_start()
    with Cut(cut_gw.ns):
        # Held on purpose: the scenario is the partition's length.
        time.sleep(HOST_CUT_S)
    ctx.fault_end()
    # Its client's connections hold requests sent during the cut until the client's 10 s
    # timeout: it has room for new ones only as those give up.
    sells_again(ctx, cut_gw)
    window_notes(ctx)
    t0 = ctx.t_fault - int(ctx.conf.get("http.request-timeout-ms")) / 1000
    t1 = ctx.t_recovered
    cut_tries = set()

    def excused(t):
        if not cut_tries:
            cut_tries.update(id(x) for x in part.snapshot() if t0 <= x.sent <= t1)
        return id(t) in cut_tries
    ctx.unanswerable = excused
    n = accepted(part_of(ctx, other), ctx.t_fault + 1, ctx.t_recovered)
    ctx.expect.append((f"{other.name} sold on during the cut", n > 0, f"{n} orders accepted by it"))
    # Its Kafka connections stalled too: they resume at TCP's next retransmission (the
    # gaps double from 200 ms, one falls some 2.6 s after a 10 s cut), or librdkafka opens
    # new ones; and its client has room again only as requests sent during the cut time
    # out (10 s). A bound that says "back", not how fast.
    ctx.post_checks.append(lambda: gateway_back(ctx, cut_gw, 15))


# ---- P3: the sale's master in a minority ---------------------------------------------------


def master_minority(ctx):
    """The sale's master cut off from its replicas and the other masters (every other Redis
    node) for HOST_CUT_S, still reachable by the gateways and consumers. It answers them
    until it sees it lost the majority (cluster-node-timeout), then refuses; meanwhile the
    majority promotes one of its replicas. No replica acknowledges what it takes after the
    cut, so with redis.wait-replicas = 1 the gateways answer none of it 200 (503 after the
    rollback); back, it rejoins as a replica and those writes are gone."""
    rc, slot, master = sale_master(ctx)
    others = sorted({a for a, _ in rc.addrs} - {master.addr[0]})
    ns, addr, took = cut_until_promoted(ctx, rc, slot, master, others)
    ctx.notes.append(f"slot {slot}: {master} ({ns}) cut off from the other {len(others)} Redis nodes for "
                     f"{HOST_CUT_S} s; {addr[0]}:{addr[1]} promoted {took:.1f} s after the cut")
    # The gateways still reach the minority, which answers CLUSTERDOWN once it sees it is
    # one while its own map still names itself: they must take the majority's map and
    # sell on the promoted master before the heal (before the fix of
    # src/gateway/redisconn.c they asked the minority for the map and answered 503 until
    # the heal).
    t_promoted = ctx.t_fault + took
    on_promoted = sum(accepted(p, t_promoted + PROMOTED_SELLS_S, ctx.t_recovered) for p in ctx.load.parts)
    ctx.expect.append((f"sold on the promoted master within {PROMOTED_SELLS_S} s, before the heal",
                       on_promoted > 0, f"{on_promoted} orders accepted from {PROMOTED_SELLS_S} s after the "
                       f"promotion until the heal ({ctx.t_recovered - t_promoted - PROMOTED_SELLS_S:.1f} s)"))
    rejoined(ctx, rc, master, addr, "the minority master")


# ---- P4: a zombie Kafka leader --------------------------------------------------------------


def topic_leaders(ctx):
    """Partition -> leader node of the order topic, from kafka.sh topics."""
    _, out = ctx.stack.sh("kafka", "topics")
    topic = re.escape(ctx.conf.get("kafka.topic"))
    return {int(m.group(1)): int(m.group(2))
            for m in re.finditer(rf"Topic: {topic}\tPartition: (\d+)\tLeader: (-?\d+)", out)}


def zombie_leader(ctx):
    """The broker leading most partitions of the order topic cut off from the other two
    brokers and from sk-gw2 for HOST_CUT_S, still reachable by sk-gw1 and the consumers.
    The controllers (the other two) fence it after broker.session.timeout.ms (4 s) and
    elect new leaders among the in-sync replicas; it does not learn of it and takes
    sk-gw1's produce requests, which it can never commit (acks=all, min.insync.replicas 2,
    and no controller to shrink the ISR): they time out, are rolled back and answered 503.
    None of its writes is answered 200; back, it truncates them and follows."""
    before = topic_leaders(ctx)
    node = collections.Counter(before.values()).most_common(1)[0][0]
    ns = f"sk-kafka{node}"
    brokers = [b.rsplit(":", 1)[0] for b in ctx.conf.get("kafka.brokers").split(",")]
    others = [a for a in brokers if a != ctx.stack.topo.addr(ns)] + [ctx.gateways[1].host]
    ctx.fault_start()
    with Cut(ns, others):
        # Held on purpose: the scenario is the partition's length.
        time.sleep(HOST_CUT_S)
    ctx.fault_end()
    window_notes(ctx)
    led = sum(1 for n in before.values() if n == node)
    ctx.notes.append(f"Kafka node {node} ({ns}), leader of {led} of {len(before)} partitions, cut off from "
                     f"the other brokers and {ctx.gateways[1].name} for {HOST_CUT_S} s")
    n = accepted(part_of(ctx, ctx.gateways[1]), ctx.t_fault + 1, ctx.t_recovered)
    ctx.expect.append((f"{ctx.gateways[1].name} sold on during the cut", n > 0, f"{n} orders accepted by it"))


# ---- P5: a consumer cut off from MariaDB, or from Redis, mid-batch -------------------------


def log_warnings(proc):
    """A note's tail: how many warnings and errors proc logged in the scenario, the first."""
    warns = [line for line in proc.log_text().splitlines() if " warn " in line or " error " in line]
    return f"{len(warns)} warnings in its log" + (f", the first: {warns[0].split(' ', 3)[-1][:160]}" if warns else "")


def consumer_cut_from_mysql(ctx):
    """sk-cons1 cut off from MariaDB for CONSUMER_CUT_S, from a moment it has a batch
    claimed and not finalized (the claimed set not empty: its transaction is about to run,
    runs, or its finalize is to come). The transaction in flight gets no answer (the
    client's 5 s read timeout): whether it committed is unknown to the consumer, which
    reconnects and retries with backoff until the heal, then writes the batch again
    (idempotent inserts: a commit that did happen is not doubled, I5); quiescence (every
    order SUCCESS with its row) says it did. The gateways never need MariaDB: no 503."""
    cons = ctx.consumers[0]
    claimed = ctx.key("claimed")
    deadline = time.monotonic() + 15
    n = 0
    while n == 0 and time.monotonic() < deadline:
        n = ctx.redis("SCARD", claimed)
        time.sleep(0.002)
    ctx.fault_start()
    with Cut(cons.ns, [ctx.conf.get("mysql.host")]):
        # Held on purpose: the scenario is the partition's length.
        time.sleep(CONSUMER_CUT_S)
    ctx.fault_end()
    ctx.expect.append(("cut mid-batch", n > 0, f"{n} orders claimed and not finalized when the cut began"))
    ctx.notes.append(f"{cons.name} ({cons.host}) cut off from MariaDB for {CONSUMER_CUT_S} s with {n} orders "
                     f"claimed; {log_warnings(cons)}")


def committed_unfinalized(ctx):
    """Orders claimed in Redis (members "orderNo|userId") whose rows MariaDB holds."""
    claimed = [m.split("|")[0] for m in ctx.redis("SMEMBERS", ctx.key("claimed"))]
    if not claimed:
        return set()
    rows = ctx.mysql.rows("SELECT order_no FROM seckill_order WHERE order_no IN ("
                          + ",".join(f"'{o}'" for o in claimed) + ")")
    return {r[0] for r in rows}


def consumer_cut_from_redis(ctx):
    """sk-cons1 cut off from every Redis node exactly between a commit and its finalize:
    another session locks the sale's counter row, which every batch's transaction updates
    last, so sk-cons1's transaction waits there with its rows written; the cut begins while
    it waits, and the lock goes. The transaction commits, and the finalize that writes
    SUCCESS cannot reach Redis until the heal: MariaDB has those rows meanwhile and Redis
    says PROCESSING, never SUCCESS before the row (I6). The gateways reach Redis: no 503."""
    rc = RedisCluster(ctx.conf, ctx.stack)
    cons = ctx.consumers[0]
    waiting = ("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() "
               f"AND HOST LIKE '{cons.host}:%' AND INFO LIKE 'UPDATE seckill_activity SET sold_count%WHERE id = {ctx.a}'")
    lock = RowLock(ctx.mysql, f"SELECT id FROM seckill_activity WHERE id = {ctx.a}")
    try:
        stacklib.poll_until(lambda: ctx.mysql.count(waiting) > 0, 15,
                            f"{cons.name}'s transaction to wait on the sale's counter row")
        ctx.fault_start()
        with Cut(cons.ns, sorted({a for a, _ in rc.addrs})):
            lock.release()
            stacklib.poll_until(lambda: ctx.mysql.count(waiting) == 0, 10, f"{cons.name}'s transaction to commit")
            first = committed_unfinalized(ctx)
            # Held on purpose: the scenario is the partition's length.
            time.sleep(CONSUMER_CUT_S)
            # sk-cons2 commits and finalizes batches throughout, each a few ms apart; what
            # stayed committed and unfinalized all along is sk-cons1's.
            committed = len(first & committed_unfinalized(ctx))
    finally:
        lock.release()
    ctx.fault_end()
    ctx.expect.append(("cut between commit and finalize", committed > 0,
                       f"{committed} orders committed in MariaDB and not finalized in Redis during the cut"))
    ctx.notes.append(f"{cons.name} ({cons.host}) cut off from every Redis node for {CONSUMER_CUT_S} s, "
                     f"{committed} orders committed and not finalized; {log_warnings(cons)}")


def run_post_checks(ctx):
    for check in ctx.post_checks:
        check()
    heal = getattr(ctx, "heal_s", None)
    c = [t for t in ctx.load.snapshot()]
    if DELAY_US:
        ctx.notes.append(f"{DELAY_US} us added each way between the gateways and the Redis nodes and brokers")
    ctx.notes.append(f"figures: {sum(1 for t in c if t.code == 200)} accepted, "
                     f"{sum(1 for t in c if t.code == 503)} answered 503"
                     + (f", healed in {heal:.1f} s" if heal is not None else ""))


# ---- the scenarios -------------------------------------------------------------------------

# 512 connections a gateway hold the requests that wait out a partition (RATE/2 a second
# for up to the request timeout, and longer for those held for a rollback's verdict).
PART = dict(gateways=2, consumers=2, generator="openloop", rate=RATE, threads=1024, warm=RATE,
            stock=1000000, max_seconds=180, expect_503=True, post=run_post_checks)

SCENARIOS = [
    Scenario("P1", f"a gateway cut off from the sale's Redis master for {GW_CUT_S} s",
             gateway_cut_from_master, **PART),
    Scenario("P2", f"the sale's Redis master's host cut off from all for {HOST_CUT_S} s",
             master_host_cut, **PART),
    Scenario("P2b", f"a gateway's host cut off from all (its clients too) for {HOST_CUT_S} s",
             gateway_host_cut, expect_errors=True, allow={"unanswered_persisted"}, **PART),
    Scenario("P3", f"the sale's Redis master cut off from the other nodes for {HOST_CUT_S} s (a minority)",
             master_minority, **PART),
    Scenario("P4", f"the Kafka leader of most partitions cut off from the other brokers and a gateway "
             f"for {HOST_CUT_S} s (a zombie leader)", zombie_leader, **PART),
    Scenario("P5a", f"a consumer cut off from MariaDB mid-batch for {CONSUMER_CUT_S} s",
             consumer_cut_from_mysql, **dict(PART, expect_503=False)),
    Scenario("P5b", f"a consumer cut off from every Redis node between commit and finalize for {CONSUMER_CUT_S} s",
             consumer_cut_from_redis, **dict(PART, expect_503=False)),
]


@pytest.mark.parametrize("sc", [pytest.param(s, id=s.key) for s in SCENARIOS])
def test_partition(partitions, sc):
    partitions(sc)
