"""TOPOLOGY=cluster: a Redis Cluster of 3 masters with 2 replicas each, three Kafka nodes with
replicated topics, two gateways sharing one port, two consumers in one group
(conf/cluster.conf, docs/scale-out.md).

The module's `cluster` fixture (test/cluster/conftest.py) brings up the cluster with
scripts/stack.sh (build/conf/test-cluster.conf: conf/cluster.conf with the tests' ports and
data directory, test/conf/cluster-namespace.conf); the module runs sales through the shared
port with the ASan builds, and the fixture stops its processes again. MariaDB is one, as in
the single stack."""

import collections
import json
import os
import re
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from adminhttp import Admin
from cluster import ADMIN_TOKEN, NODE_BITS_SHIFT, node_pid, replicas_of, sales_on_different_masters
from stack import ROOT, poll_until


def keys_of(path):
    keys = set()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        m = re.match(r"\s*([a-z][a-z0-9.-]*)\s*=", line)
        if m:
            keys.add(m.group(1))
    return keys


def test_cluster_conf_has_every_key_of_the_single_one():
    assert keys_of(ROOT / "conf" / "cluster.conf") == keys_of(ROOT / "conf" / "seckill.conf")


def test_status_prints_every_process_with_its_pid_and_address(cluster):
    p = cluster.sh("stack.sh", "status")
    assert p.returncode == 0, p.stdout + p.stderr
    lines = {m.group(1): m for m in re.finditer(r"^([a-z0-9-]+): +running \(pid (\d+), ([^)]+)\)$",
                                                 p.stdout, re.M)}
    nodes = cluster.conf.get("redis.nodes").split(",")
    expected = {f"redis-{i}" for i in range(1, len(nodes) + 1)} | {
        "mariadb", "kafka-1", "kafka-2", "kafka-3", "order-consumer-1", "order-consumer-2", "seckill-server-1",
        "seckill-server-2", "seckill-admin"}
    assert set(lines) == expected, p.stdout
    assert [lines[f"redis-{i}"].group(3).split()[0] for i in range(1, len(nodes) + 1)] == nodes
    roles = collections.Counter(lines[f"redis-{i}"].group(3).split()[1] for i in range(1, len(nodes) + 1))
    assert roles == {"master": 3, "slave": 6}, p.stdout
    assert p.stdout.rstrip().endswith("stack: up"), p.stdout
    brokers = cluster.conf.get("kafka.brokers").split(",")
    assert [lines[f"kafka-{i}"].group(3) for i in (1, 2, 3)] == brokers
    assert {lines[f"seckill-server-{i}"].group(3) for i in (1, 2)} == {f"http://127.0.0.1:{cluster.port}"}
    metrics = cluster.conf.get_int("consumer.metrics-port")
    assert [lines[f"order-consumer-{i}"].group(3) for i in (1, 2)] == \
        [f"metrics http://127.0.0.1:{metrics}", f"metrics http://127.0.0.1:{metrics + 1}"]
    assert lines["seckill-admin"].group(3) == f"http://127.0.0.1:{cluster.env['SECKILL_ADMIN_PORT']}/admin"
    for m in lines.values():
        assert Path(f"/proc/{m.group(2)}").exists(), m.group(0)


def test_topics_are_on_three_replicas_and_need_two_in_sync(cluster):
    text = cluster.describe()
    for topic in (cluster.conf.get("kafka.topic"), cluster.conf.get("kafka.dead-letter-topic")):
        head = re.search(rf"^Topic: {re.escape(topic)}\t.*$", text, re.M)
        assert head, text
        assert "ReplicationFactor: 3" in head.group(0) and "min.insync.replicas=2" in head.group(0), head.group(0)
        parts = re.findall(rf"Topic: {re.escape(topic)}\tPartition: \d+\tLeader: \d+\tReplicas: ([\d,]+)\tIsr: ([\d,]+)", text)
        assert parts, text
        for replicas, isr in parts:
            assert sorted(replicas.split(",")) == ["1", "2", "3"] and len(isr.split(",")) == 3, (replicas, isr)


def test_a_sale_through_the_shared_port_runs_on_both_gateways_and_both_consumers(cluster, ids):
    sale = cluster.ctl.create_sale(stock=50)
    users = [ids() for _ in range(80)]
    answers = cluster.sale(users, sale.activity_id)
    statuses = collections.Counter(status for status, _ in answers)
    assert statuses == {200: 50, 409: 30}, statuses
    orders = [body["orderNo"] for status, body in answers if status == 200]
    nodes = collections.Counter((int(o.split("-")[0]) >> NODE_BITS_SHIFT) & 1023 for o in orders)
    assert len(nodes) == 2, f"every accepted order came from one gateway: {nodes}"
    poll_until(lambda: cluster.rows(sale.activity_id) == 50, 60, "the 50 orders in MariaDB")
    cluster.verified(sale.activity_id)
    # Both consumers hold partitions of the order topic (one group, 6 partitions).
    topic = cluster.conf.get("kafka.topic")
    # The group may still be rebalancing when the orders are in: the second consumer's
    # assignment can come a moment after the first one drained everything.
    for name in ("order-consumer-1", "order-consumer-2"):
        path = cluster.data / "log" / f"{name}.log"
        poll_until(lambda: re.search(rf"assigned .*{re.escape(topic)}", path.read_text(errors="replace")), 30,
                   f"{name} assigned partitions of {topic}")


def test_the_admin_api_runs_a_sale_on_the_redis_cluster(cluster, ids):
    """seckill-admin as make up started it: a sale created over the API is warmed on its
    slot's master, sells through the shared port, and verify over the API agrees with
    seckillctl's."""
    admin = Admin(f"http://127.0.0.1:{cluster.env['SECKILL_ADMIN_PORT']}", ADMIN_TOKEN)
    coupon = admin.create_coupon(40)
    activity = admin.create_activity(coupon, 20)
    show = admin.get(f"/admin/activities/{activity}")
    assert show.code == 200 and show["redis"]["stockLeft"] == 20, repr(show)
    answers = cluster.sale([ids() for _ in range(30)], activity)
    assert collections.Counter(status for status, _ in answers) == {200: 20, 409: 10}
    poll_until(lambda: cluster.rows(activity) == 20, 60, "the 20 orders in MariaDB")
    poll_until(lambda: admin.get(f"/admin/activities/{activity}/verify")["ok"], 30, "verify over the API")
    over_api = admin.get(f"/admin/activities/{activity}/verify")
    cli = cluster.ctl("--json", "verify", activity)
    assert cli.rc == 0, repr(cli)
    assert [(c["id"], c["ok"]) for c in over_api["checks"]] == \
        [(c["id"], c["ok"]) for c in json.loads(cli.last_line())["checks"]]
    assert admin.post(f"/admin/activities/{activity}/cancel").code == 200
    assert admin.get(f"/admin/activities/{activity}")["status"] == "CANCELLED"


def test_losing_the_broker_that_leads_most_partitions_loses_no_order(cluster, ids):
    topic = cluster.conf.get("kafka.topic")
    leaders = collections.Counter(cluster.leaders(topic).values())
    victim = leaders.most_common(1)[0][0]
    os.kill(cluster.kafka_pid(victim), signal.SIGKILL)
    # Mid-failover: until the controllers see the broker gone (broker.session.timeout.ms)
    # and elect new leaders, orders for its partitions wait in the producer; those that
    # outwait kafka.producer.message.timeout.ms roll back and are told 503. Nothing else.
    during = cluster.ctl.create_sale(stock=30)
    answers = cluster.sale([ids() for _ in range(40)], during.activity_id)
    statuses = collections.Counter(status for status, _ in answers)
    assert set(statuses) <= {200, 409, 503} and statuses[200] <= 30, statuses
    poll_until(lambda: cluster.rows(during.activity_id) == statuses[200], 90,
               f"the {statuses[200]} accepted orders in MariaDB")
    cluster.verified(during.activity_id)

    # After the failover every partition has a live leader, and with two replicas of three
    # min.insync.replicas=2 still holds: produce succeeds, no 503.
    poll_until(lambda: victim not in cluster.leaders(topic).values(), 60,
               f"leaders of {topic} elected away from node {victim}")
    after = cluster.ctl.create_sale(stock=30)
    answers = cluster.sale([ids() for _ in range(40)], after.activity_id)
    statuses = collections.Counter(status for status, _ in answers)
    assert statuses == {200: 30, 409: 10}, statuses
    poll_until(lambda: cluster.rows(after.activity_id) == 30, 90, "the 30 orders in MariaDB")
    cluster.verified(after.activity_id)
    p = cluster.sh("kafka.sh", "--node", str(victim), "start", timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


# ---- the Redis Cluster -------------------------------------------------------------------


def test_sales_on_three_masters_sell_exactly_their_stock_through_both_gateways(cluster, ids):
    sales = sales_on_different_masters(cluster, 3, stock=30)
    with ThreadPoolExecutor(3) as pool:
        runs = list(pool.map(lambda s: cluster.sale([ids() for _ in range(50)], s.activity_id), sales))
    for sale, answers in zip(sales, runs):
        statuses = collections.Counter(status for status, _ in answers)
        assert statuses == {200: 30, 409: 20}, (sale, statuses)
        nodes = collections.Counter((int(b["orderNo"].split("-")[0]) >> NODE_BITS_SHIFT) & 1023
                                    for status, b in answers if status == 200)
        assert len(nodes) == 2, f"{sale}: every accepted order came from one gateway: {nodes}"
    for sale in sales:
        poll_until(lambda: cluster.rows(sale.activity_id) == 30, 60, f"the 30 orders of {sale} in MariaDB")
        cluster.verified(sale.activity_id)
    r = cluster.ctl("stats", "--json")
    assert r.rc == 0, repr(r)
    stats = {a["id"]: a for a in json.loads(r.stdout)["activities"]}
    for sale in sales:
        assert stats[sale.activity_id]["stockLeft"] == 0, stats[sale.activity_id]


def test_a_sale_goes_on_while_its_slot_migrates_to_another_master(cluster, ids):
    """ASK while the slot is being imported, MOVED once it has moved: the gateways and
    the consumers follow both, and the sale still sells exactly its stock.

    While the slot is half-moved the target answers a script whose keys are not all there
    yet (a new user's limit keys never are) with TRYAGAIN: those requests are told 503 and
    change nothing. Once the slot has moved, the next request succeeds."""
    sale = cluster.ctl.create_sale(stock=12)
    before = cluster.sale([ids() for _ in range(4)], sale.activity_id)
    assert [s for s, _ in before] == [200] * 4, before
    source = cluster.owner(sale.activity_id)
    target = next(node for node in cluster.masters() if node != source)

    slot = cluster.migrate_slot(sale.activity_id, target, finish=False)
    try:
        # Every key is on the target, the slot still the source's: the source answers ASK.
        asked = collections.Counter(s for s, _ in cluster.sale([ids() for _ in range(2)], sale.activity_id))
    finally:
        # A slot left half-moved would stall every later sale of it (and its replays).
        cluster.finish_migration(slot, target)
    assert set(asked) <= {200, 503}, asked
    assert cluster.owner(sale.activity_id) == target
    # The gateways' maps still name the source: it answers MOVED, and the request succeeds.
    status, body = cluster.execute(ids(), sale.activity_id)
    assert status == 200, body
    left = 12 - 4 - asked[200] - 1
    rest = collections.Counter(s for s, _ in cluster.sale([ids() for _ in range(left + 3)], sale.activity_id))
    assert rest == {200: left, 409: 3}, rest

    poll_until(lambda: cluster.rows(sale.activity_id) == 12, 60, "the 12 orders in MariaDB")
    cluster.verified(sale.activity_id)
    logs = "".join((cluster.data / "log" / f"seckill-server-{i}.log").read_text(errors="replace") for i in (1, 2))
    assert re.search(rf"redis: ASK {slot} ", logs) and re.search(rf"redis: MOVED {slot} ", logs), logs[-3000:]
    # The consumers' maps were as old: their claims of the later orders met the MOVED too.
    logs = "".join((cluster.data / "log" / f"order-consumer-{i}.log").read_text(errors="replace") for i in (1, 2))
    assert re.search(rf"redis: MOVED {slot} ", logs), logs[-3000:]


def sells_and_persists(cluster, ids, sale, orders, within):
    """orders new users buy in sale: the first 200 comes within `within` seconds (a gateway
    may answer 503 until its slot map names a promoted replica), and every order told 200
    is in MariaDB and SUCCESS `within` seconds after its answer."""
    deadline = time.monotonic() + within
    accepted = []
    while len(accepted) < orders:
        status, body = cluster.execute(ids(), sale.activity_id)
        assert status in (200, 503), body
        if status == 200:
            accepted.append(body["orderNo"])
        else:
            assert time.monotonic() < deadline, f"{sale}: still 503 after {within} s: {body}"
    persisted = f"SELECT COUNT(*) FROM seckill_order WHERE order_no IN ({','.join(repr(o) for o in accepted)})"
    poll_until(lambda: cluster.mysql.count(persisted) == len(accepted), within,
               f"the {len(accepted)} orders of {sale} in MariaDB")
    # SUCCESS follows the row by a finalize, later when its slot's master was away then.
    cluster.verified(sale.activity_id, within)
    return accepted


def lose_for_good(cluster, client):
    """kill -9 of one Redis node that is not started again until the test ends."""
    os.kill(node_pid(cluster, client), signal.SIGKILL)


def bring_back(cluster):
    p = cluster.sh("redis-cluster.sh", "start", timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_redis_master_lost_for_good_stops_no_sale(cluster, ids):
    """A machine gone: the master of one sale's slot killed and not started again. Its
    replica is promoted and, with two replicas of each master (redis.cluster-replicas), it
    still has one, so redis.wait-replicas = 1 holds: that sale goes on selling and
    persisting, and the sales on the other masters never stop. With one replica per master
    the promoted replica had none: no claim could be acknowledged, and the consumers'
    retries held back every sale's orders. And a consumer that met the lost master
    refusing connections asks the others for the slot map again: it kept knocking on the
    dead address, and every batch with a user coupon in those slots waited for good."""
    sales = sales_on_different_masters(cluster, 3, stock=60)
    for sale in sales:
        sells_and_persists(cluster, ids, sale, 5, within=20)
    # The sale of the master with the most replicas goes first: two as shipped (replica
    # migration after earlier faults may have moved one between masters).
    sales.sort(key=lambda s: -len(replicas_of(cluster, cluster.owner(s.activity_id))))
    lost = cluster.owner(sales[0].activity_id)
    assert len(replicas_of(cluster, lost)) >= 2, "the shipped cluster has two replicas of each master"
    lose_for_good(cluster, cluster.masters()[lost])
    try:
        # At once, before the promotion: the other masters' sales sell, and their buyers'
        # coupon records, some in the lost master's slots, reach the promoted replica.
        for sale in sales[1:]:
            sells_and_persists(cluster, ids, sale, 10, within=15)
        poll_until(lambda: cluster.owner(sales[0].activity_id) != lost, 30,
                   f"a replica of {lost} promoted")
        sells_and_persists(cluster, ids, sales[0], 10, within=15)
        for sale in sales:
            r = cluster.ctl("verify", sale.activity_id)
            assert r.rc == 0, repr(r)
    finally:
        bring_back(cluster)


def test_a_redis_replica_lost_for_good_stops_no_sale(cluster, ids):
    """One replica of a sale's master killed and not started again: the other replica
    still acknowledges every write (redis.wait-replicas = 1), and the sale sells and
    persists as before."""
    sale = cluster.ctl.create_sale(stock=40)
    sells_and_persists(cluster, ids, sale, 5, within=20)
    master = cluster.owner(sale.activity_id)
    lose_for_good(cluster, replicas_of(cluster, master)[0])
    try:
        sells_and_persists(cluster, ids, sale, 15, within=15)
        r = cluster.ctl("verify", sale.activity_id)
        assert r.rc == 0, repr(r)
    finally:
        bring_back(cluster)


def test_start_gives_every_master_its_replicas_back(cluster):
    """After faults a master can hold three replicas and another one (a node back follows
    the master it followed last; replica migration moves others): losing that one's last
    replica for good would stop its sales. redis-cluster.sh start moves a replica back."""
    short, rich = list(cluster.masters())[:2]
    mover = replicas_of(cluster, short)[0]
    assert mover("CLUSTER", "REPLICATE", rich) == "OK"
    poll_until(lambda: len(replicas_of(cluster, short)) == 1, 20, f"{short} down to one replica")
    bring_back(cluster)
    layout = {m: len(replicas_of(cluster, m)) for m in cluster.masters()}
    assert sorted(layout.values()) == [2, 2, 2], layout


def consumer_pids(cluster):
    return [int(p.read_text().strip()) for p in sorted((cluster.data / "run").glob("order-consumer*.pid"))]


def test_a_shard_left_without_replicas_holds_back_no_other_sale(cluster, ids):
    """Two faults in one shard: both replicas of one sale's master gone for good, so no
    write there can meet redis.wait-replicas = 1. Orders of that sale already in Kafka
    cannot be claimed; the consumers set them aside, and a sale on another master is still
    persisted within seconds. Once a replica is back, the orders set aside end SUCCESS.
    Before the lot, the consumers retried such a batch whole, and every other sale's
    orders in it waited with it."""
    held, other = sales_on_different_masters(cluster, 2, stock=40)
    master = cluster.owner(held.activity_id)
    replicas = replicas_of(cluster, master)
    assert replicas, f"master {master} has no replica"
    # Replica migration would hand the orphaned master a replica of a master that has two;
    # with one replica left everywhere else, none may move (cluster-migration-barrier 1).
    spares = [replicas_of(cluster, m)[1:] for m in cluster.masters() if m != master]
    doomed = replicas + [r for extra in spares for r in extra]
    consumers = consumer_pids(cluster)
    assert len(consumers) == 2, consumers
    # The consumers hold still while the orders queue up, so none is claimed before the fault.
    for pid in consumers:
        os.kill(pid, signal.SIGSTOP)
    try:
        answers = cluster.sale([ids() for _ in range(10)], held.activity_id)
        assert [s for s, _ in answers] == [200] * 10, answers
        waiting = [body["orderNo"] for _, body in answers]
        for replica in doomed:
            lose_for_good(cluster, replica)
    finally:
        for pid in consumers:
            os.kill(pid, signal.SIGCONT)
    try:
        answers = cluster.sale([ids() for _ in range(10)], other.activity_id)
        assert [s for s, _ in answers] == [200] * 10, answers
        bought = [body["orderNo"] for _, body in answers]
        persisted = f"SELECT COUNT(*) FROM seckill_order WHERE order_no IN ({','.join(repr(o) for o in bought)})"
        poll_until(lambda: cluster.mysql.count(persisted) == len(bought), 15,
                   f"sale {other.activity_id}'s orders in MariaDB while {master} has no replica")
        assert cluster.rows(held.activity_id) == 0, "an order was claimed without its replica's acknowledgement"
    finally:
        bring_back(cluster)
    poll_until(lambda: cluster.rows(held.activity_id) == len(waiting), 60,
               "the orders set aside in MariaDB once a replica is back")
    # The nodes brought back rejoined as replicas of whichever master they followed last;
    # redis-cluster.sh start gave each master its two again.
    layout = {m: len(replicas_of(cluster, m)) for m in cluster.masters()}
    assert sorted(layout.values()) == [2, 2, 2], layout
    for sale in (held, other):
        r = cluster.ctl("verify", sale.activity_id)
        assert r.rc == 0, repr(r)


def test_a_stopped_redis_cluster_comes_back_with_its_data(cluster, ids):
    sale = cluster.ctl.create_sale(stock=5)
    answers = cluster.sale([ids() for _ in range(3)], sale.activity_id)
    assert [s for s, _ in answers] == [200] * 3, answers
    poll_until(lambda: cluster.rows(sale.activity_id) == 3, 60, "the 3 orders in MariaDB")
    for action in ("stop", "start"):
        p = cluster.sh("redis-cluster.sh", action)
        assert p.returncode == 0, p.stdout + p.stderr
    r = cluster.ctl("activity", "show", sale.activity_id, "--json")
    assert r.rc == 0, repr(r)
    kept = json.loads(r.stdout)["redis"]
    assert kept["stockLeft"] == 2 and kept["orders"]["SUCCESS"] == 3, r.stdout
    # The gateways reconnect by themselves and sell the rest.
    poll_until(lambda: cluster.execute(ids(), sale.activity_id)[0] == 200, 30, "a gateway selling again")
    r = cluster.ctl("verify", sale.activity_id)
    assert r.rc == 0, repr(r)
