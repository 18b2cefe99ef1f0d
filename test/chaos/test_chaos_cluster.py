"""The chaos scenarios of the cluster topology (make chaos TOPOLOGY=cluster): three Kafka
nodes with the order topic on three replicas (min.insync.replicas=2), two gateways and two
consumers of one group, a sale under load while one part fails. chaoslib.run does the
rest, as for the single stack: I1-I6 and seckillctl verify after each."""

import collections
import re
import time

import pytest

from chaoslib import Scenario, log

BROKERS_DOWN_S = 10
RATE = 1200  # requests/s over both gateways: at least a quarter of what they take together


def chaos_topic(ctx):
    return ctx.conf.get("kafka.topic")


def leaders(ctx):
    """Partition -> leader node of the chaos topic, from kafka.sh topics."""
    _, out = ctx.stack.sh("kafka", "topics")
    topic = re.escape(chaos_topic(ctx))
    return {int(m.group(1)): int(m.group(2))
            for m in re.finditer(rf"Topic: {topic}\tPartition: (\d+)\tLeader: (-?\d+)", out)}


def leader_kill(ctx):
    """kill -9 of the broker that leads most partitions of the order topic; back 5 s later.
    Orders for its partitions wait in the producers until new leaders are elected; those
    that outwait the message timeout roll back and are told 503."""
    victim = collections.Counter(leaders(ctx).values()).most_common(1)[0][0]
    ctx.fault_start()
    ctx.stack.kill9(ctx.stack.kafka_pidfile(victim))
    ctx.notes.append(f"killed Kafka node {victim}, leader of "
                     f"{collections.Counter(leaders(ctx).values()).get(victim, 0)} partitions after the kill")
    time.sleep(5)
    ctx.stack.sh("kafka", "--node", str(victim), "start")
    ctx.fault_end()


def two_brokers_stop(ctx):
    """Two of three brokers stopped for BROKERS_DOWN_S: one replica in sync is fewer than
    min.insync.replicas, so produce fails, the reservations roll back and the clients are
    told 503; nothing is lost, and the sale goes on once they are back."""
    ctx.fault_start()
    for node in (2, 3):
        ctx.stack.sh("kafka", "--node", str(node), "stop")
    time.sleep(BROKERS_DOWN_S)
    for node in (2, 3):
        ctx.stack.sh("kafka", "--node", str(node), "start")
    ctx.fault_end()


def gateway_kill(ctx):
    """kill -9 of one of two gateways, not restarted: the other keeps serving; the dead
    one's reservations come back once its node lease lapsed and the reapers' grace passed."""
    dead, alive = ctx.gateways[1], ctx.gateways[0]
    before = alive_accepts(ctx, alive)
    ctx.fault_start()
    dead.kill9()
    ctx.fault_end()
    time.sleep(3)
    after = alive_accepts(ctx, alive)
    ctx.expect.append(("the other gateway kept serving", after > before,
                       f"{after - before} orders accepted by it in the 3 s after the kill"))


def alive_accepts(ctx, gateway):
    port = gateway.conf.http_port
    return sum(p.accepted for p in ctx.load.parts if p.port == port)


def consumer_kill(ctx):
    """kill -9 of one of two consumers mid-batch, not restarted: the group hands its
    partitions to the other once its session expires, which replays the uncommitted batch."""
    claimed = ctx.key("claimed")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and ctx.redis("SCARD", claimed) == 0:
        time.sleep(0.002)
    ctx.fault_start()
    ctx.consumers[1].kill9()
    ctx.fault_end()
    log("consumer 2 killed; consumer 1 takes over after the session timeout")


# The C generator (bench/openloop) keeps RATE on two cores next to three brokers; 256
# connections (512 a gateway) hold the requests that wait out a failover. A broker's restart takes tens of
# seconds here, so the load may run 150 s, and the stock outlasts it.
CLUSTER = dict(gateways=2, consumers=2, rate=RATE, threads=1024, warm=600, generator="openloop",
               stock=300000, max_seconds=150)

SCENARIOS = [
    Scenario("C1", "Kafka leader kill -9 (most partitions) + restart", leader_kill,
             expect_503=True, **CLUSTER),
    Scenario("C2", f"2 of 3 Kafka brokers stopped {BROKERS_DOWN_S} s", two_brokers_stop,
             expect_503=True, **CLUSTER),
    Scenario("C3", "one of two gateways kill -9", gateway_kill, expect_503=True,
             expect_errors=True, allow={"unanswered_persisted"}, **CLUSTER),
    Scenario("C4", "one of two consumers kill -9 mid-batch", consumer_kill, **CLUSTER),
]


@pytest.mark.parametrize("sc", [pytest.param(s, id=s.key) for s in SCENARIOS])
def test_scenario(chaos, sc):
    chaos(sc)
