"""One hot sale across the masters of the tests' Redis Cluster (TOPOLOGY=cluster, the stack
of the `cluster` fixture, test/cluster/conftest.py): its buckets land on different masters,
a sale through both gateways sells every unit once per user while the rebalance feeds the
buckets its users empty, and a transfer cut between its steps loses and creates nothing
(docs/protocol.md, "Buckets and rebalance"; docs/scale-out.md)."""

import collections
import json
import os
import signal
import time

from buckets import bucket_key, bucket_of, buckets_of, buy, run_script, users_of_bucket
from cluster import NODE_BITS_SHIFT, node_pid, replicas_of
from stack import poll_until
from resp import key_slot, redis_client


def create_bucketed(ctl, stock, buckets, start="now"):
    coupon = ctl.create_id("coupon", "create", "--name", "b", "--type", "CASH", "--amount", "5.00",
                           "--total", stock * 2, "--start", "-1m", "--end", "+1d")
    return ctl.create_id("activity", "create", "--coupon", coupon, "--stock", stock, "--start", start,
                         "--end", "+1h", "--buckets", buckets)


def master_of_tag(cluster, tag):
    slot = key_slot(f"{{{tag}}}")
    for first, last, master, *_ in cluster.redis_nodes()[0]("CLUSTER", "SLOTS"):
        if first <= slot <= last:
            return master[2]
    raise AssertionError(f"slot {slot} has no master")


def sells_the_rest(cluster, ids, activity, left, sold):
    """New buyers take exactly what is left: `left` of them answered 200 and three more 409;
    MariaDB then holds the sale's `sold` rows and verify passes."""
    statuses = collections.Counter(buy(cluster.execute, ids(), activity)[0] for _ in range(left + 3))
    assert statuses == {200: left, 409: 3}, statuses
    poll_until(lambda: cluster.rows(activity) == sold, 60, f"the {sold} orders in MariaDB")
    cluster.verified(activity)


def test_three_buckets_are_served_by_three_masters(cluster):
    activity = create_bucketed(cluster.ctl, stock=30, buckets=3)
    buckets, _ = buckets_of(cluster.ctl, activity)
    assert len(buckets) == 3 and buckets[0]["tag"] == str(activity), buckets
    assert len({master_of_tag(cluster, b["tag"]) for b in buckets}) == 3, buckets
    assert len({b["master"] for b in buckets}) == 3, buckets
    assert [b["stockLeft"] for b in buckets] == [10, 10, 10], buckets
    # More buckets than masters: the first three take a master each, the rest salt 0.
    activity = create_bucketed(cluster.ctl, stock=40, buckets=4)
    buckets, _ = buckets_of(cluster.ctl, activity)
    assert len({master_of_tag(cluster, b["tag"]) for b in buckets[:3]}) == 3, buckets
    assert buckets[3]["tag"] == f"{activity}.3.0", buckets


def test_a_bucketed_sale_through_both_gateways_sells_every_unit_once_per_user(cluster, ids):
    activity = create_bucketed(cluster.ctl, stock=30, buckets=3)
    # Two thirds of the buyers land in bucket 0, which holds a third of the stock: the
    # sale sells out only if the rebalance moves the other buckets' stock to it.
    users = users_of_bucket(ids, 0, 3, 30) + [ids() for _ in range(15)]
    answers = {}

    def one(u):
        answers[u] = buy(cluster.execute, u, activity, timeout=60)

    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, users))
    statuses = collections.Counter(s for s, _, _ in answers.values())
    assert statuses == {200: 30, 409: 15}, statuses
    assert all(b["status"] == "OUT_OF_STOCK" for s, b, _ in answers.values() if s == 409)
    assert sum(r for _, _, r in answers.values()) > 0, "no buyer ever met an empty bucket"
    orders = [b["orderNo"] for s, b, _ in answers.values() if s == 200]
    nodes = collections.Counter((int(o.split("-")[0]) >> NODE_BITS_SHIFT) & 1023 for o in orders)
    assert len(nodes) == 2, f"every accepted order came from one gateway: {nodes}"
    winners = [u for u, (s, _, _) in answers.items() if s == 200]
    assert sum(1 for u in winners if bucket_of(u, 3) == 0) > 10, "bucket 0 sold only its own share"
    poll_until(lambda: cluster.rows(activity) == 30, 60, "the 30 orders in MariaDB")
    assert cluster.mysql.count(f"SELECT COUNT(DISTINCT user_id) FROM seckill_order WHERE activity_id = {activity}") == 30
    buckets, in_transit = buckets_of(cluster.ctl, activity)
    assert [b["stockLeft"] for b in buckets] == [0, 0, 0] and in_transit == 0, buckets
    cluster.verified(activity)
    r = cluster.ctl("stats", "--json")
    assert r.rc == 0, repr(r)
    stats = {a["id"]: a for a in json.loads(r.stdout)["activities"]}
    assert stats[activity]["stockLeft"] == 0, stats[activity]


def test_a_transfer_cut_between_its_steps_loses_and_creates_nothing(cluster, ids):
    redis = redis_client(cluster.conf)
    start = time.time() + 8
    activity = create_bucketed(cluster.ctl, stock=9, buckets=3,
                               start=time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(start)))
    tags = [b["tag"] for b in buckets_of(cluster.ctl, activity)[0]]
    src = [bucket_key(cluster.conf, k, tags[2]) for k in ("activity", "stock", "xfer:out")]
    dst = [bucket_key(cluster.conf, k, tags[1]) for k in ("stock", "xfer:in")]
    # Step 1 on bucket 2's master, and the "gateway" dies: 3 units in transit.
    xfer, units = run_script(redis, src, "out", "1", "3", tags[2])
    assert units == 3
    buckets, in_transit = buckets_of(cluster.ctl, activity)
    assert in_transit == 3 and [b["stockLeft"] for b in buckets] == [3, 3, 0], buckets
    r = cluster.ctl("verify", activity)
    assert r.rc == 0 and "in transit between 3 buckets 3" in r.stdout, repr(r)
    # A gateway's pass delivers it once the sale is on (step 2 on bucket 1's master, step 3
    # back on bucket 2's), whichever of the two gateways gets there first.
    poll_until(lambda: redis("HLEN", src[2]) == 0, 40, "the transfer finished by a rebalance pass")
    assert redis("SISMEMBER", dst[1], xfer) == 1
    # Later passes may move units on (bucket 2 is empty): they settle at 9 in all.
    poll_until(lambda: sum(int(redis("GET", bucket_key(cluster.conf, "stock", t))) for t in tags) == 9, 20,
               "the 9 units back in the buckets' stock keys")
    # Step 2 once more (a pass that crashed before step 3 and is replayed): nothing added.
    assert run_script(redis, dst, "in", xfer, str(units)) == 0
    sells_the_rest(cluster, ids, activity, left=9, sold=9)
    redis.close()


REPLICAS_STOPPED_S = 0.5


def test_a_transfer_goes_on_only_once_a_replica_holds_its_step(cluster, ids):
    """redis.wait-replicas covers the rebalance too: with the replicas of the masters of
    buckets 1 and 2 stopped, their stock may leave them ('out') but is not delivered to
    bucket 0 (a failover to a replica that missed the 'out' would find the units in the
    source bucket too, and they would be sold twice); once a replica holds it again, the
    next pass delivers it, and the sale sells its stock exactly."""
    redis = redis_client(cluster.conf)
    activity = create_bucketed(cluster.ctl, stock=30, buckets=3)
    tags = [b["tag"] for b in buckets_of(cluster.ctl, activity)[0]]
    stock0 = bucket_key(cluster.conf, "stock", tags[0])
    # Every replica of both (two each as shipped; replica migration after earlier faults may
    # have moved one), for less than cluster-node-timeout: no failover, no migration.
    stopped = [node_pid(cluster, r) for t in tags[1:] for r in replicas_of(cluster, master_of_tag(cluster, t))]
    assert len(stopped) >= 2, stopped
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)
    try:
        first = [cluster.execute(u, activity) for u in users_of_bucket(ids, 0, 3, 10)]
        assert [s for s, _ in first] == [200] * 10, first
        deadline = time.monotonic() + REPLICAS_STOPPED_S
        while time.monotonic() < deadline:
            assert int(redis("GET", stock0)) == 0, "units delivered that no replica of their source holds"
            time.sleep(0.05)
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
    status, body, _ = buy(cluster.execute, users_of_bucket(ids, 0, 3, 1)[0], activity)
    assert status == 200, body
    sells_the_rest(cluster, ids, activity, left=19, sold=30)
    redis.close()


def test_cancel_of_a_bucketed_sale_returns_the_stock_of_every_master(cluster, ids):
    activity = create_bucketed(cluster.ctl, stock=15, buckets=3)
    statuses = collections.Counter(buy(cluster.execute, ids(), activity)[0] for _ in range(4))
    assert statuses == {200: 4}, statuses
    poll_until(lambda: cluster.rows(activity) == 4, 60, "the 4 orders in MariaDB")
    r = cluster.ctl("activity", "cancel", activity, "--json")
    assert r.rc == 0, repr(r)
    assert json.loads(r.stdout)["returned"] == 11, r.stdout
    buckets, in_transit = buckets_of(cluster.ctl, activity)
    assert [b["stockLeft"] for b in buckets] == [0, 0, 0] and in_transit == 0, buckets
    r = cluster.ctl("verify", activity)
    assert r.rc == 0, repr(r)
