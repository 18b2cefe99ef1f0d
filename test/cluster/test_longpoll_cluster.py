"""Long polling on the tests' Redis Cluster (TOPOLOGY=cluster, the stack of the `cluster`
fixture, test/cluster/conftest.py; issue 15 item 4): a held request subscribes on the master that
owns its sale's slot, and only there (sharded pub/sub), and is answered as soon as the
script that ends its order (here the gateway's rollback) publishes on that shard."""

import time

from cluster import Shard, fail_back, fail_over, sales_on_different_masters
from longpoll import WAKE_SLACK_S, Held, release, stuck_order
from stack import poll_until


def subscribers(node, activity):
    reply = node("PUBSUB", "SHARDNUMSUB", f"seckill:final:{{{activity}}}")
    return int(reply[1])


def test_held_requests_are_woken_on_the_shard_of_their_sale(cluster, ids):
    sales = sales_on_different_masters(cluster, 3, stock=10)
    masters = cluster.masters()
    for sale in sales:
        a = sale.activity_id
        owner = masters[cluster.owner(a)]

        def redis(*args, owner=owner):
            return owner(*args)
        order = stuck_order(redis, cluster.conf, a, ids())
        h = Held(cluster.port, f"/seckill/orders/{order}?wait=20")
        h.start()
        poll_until(lambda: subscribers(owner, a) == 1, 20, f"a gateway subscribed to sale {a} on its master")
        others = [subscribers(m, a) for node_id, m in masters.items() if node_id != cluster.owner(a)]
        assert others == [0, 0], f"sale {a}: subscribed on masters that do not own its slot: {others}"
        assert h.is_alive(), f"sale {a}: answered before its order was final: {h.body}"
        final_at = time.monotonic()
        release(redis, cluster.conf, a, order)  # the gateway's rollback: FAILED, published on the shard
        code, body = h.result(30)
        assert code == 200 and body["status"] == "FAILED" and body["orderNo"] == order, body
        late = h.answered_at - final_at
        assert late < WAKE_SLACK_S, f"sale {a}: answered {late:.2f} s after release.lua published"


def test_a_held_request_follows_its_slot_to_another_master(cluster, ids):
    """The slot of a sale with a held request moves to another master: the old master drops
    the subscription (Redis sends sunsubscribe), the gateway subscribes on the new owner and
    reads the status again, and the rollback published there wakes the request."""
    sale = sales_on_different_masters(cluster, 1, stock=10)[0]
    a = sale.activity_id
    masters = cluster.masters()
    source = cluster.owner(a)
    order = stuck_order(masters[source], cluster.conf, a, ids())
    h = Held(cluster.port, f"/seckill/orders/{order}?wait=25")
    h.start()
    poll_until(lambda: subscribers(masters[source], a) == 1, 20, f"the subscription of sale {a} on its master")
    target = next(node_id for node_id in masters if node_id != source)
    cluster.migrate_slot(a, target)
    poll_until(lambda: subscribers(masters[target], a) == 1, 20, f"the subscription of sale {a} on its new master")
    assert subscribers(masters[source], a) == 0
    assert h.is_alive(), f"answered before its order was final: {h.body}"
    final_at = time.monotonic()
    release(masters[target], cluster.conf, a, order)
    code, body = h.result(30)
    assert code == 200 and body["status"] == "FAILED" and body["orderNo"] == order, body
    assert h.answered_at - final_at < WAKE_SLACK_S, f"answered {h.answered_at - final_at:.2f} s after release.lua"


def test_a_held_request_survives_the_failover_of_its_master(cluster, ids):
    """kill -9 of the master serving a sale with a held request; its replica takes over. The
    gateway loses its subscriber connection, learns the new map and subscribes on the
    promoted master, where the rollback's message then wakes the request."""
    sale = cluster.ctl.create_sale(stock=10)
    a = sale.activity_id
    shard = Shard(cluster, a)
    master = shard.client(shard.master_id)
    order = stuck_order(master, cluster.conf, a, ids())
    replicas = len(shard.replica_ids)
    assert master("WAIT", replicas, 5000) >= replicas, "a replica does not have the order"
    h = Held(cluster.port, f"/seckill/orders/{order}?wait=30")
    h.start()
    poll_until(lambda: subscribers(master, a) == 1, 20, f"the subscription of sale {a} on its master")
    old, new = fail_over(shard)
    try:
        promoted = shard.client(new)
        poll_until(lambda: subscribers(promoted, a) == 1, 20, "the subscription on the promoted master")
        assert h.is_alive(), f"answered before its order was final: {h.body}"
        final_at = time.monotonic()
        release(promoted, cluster.conf, a, order)
        code, body = h.result(30)
        assert code == 200 and body["status"] == "FAILED" and body["orderNo"] == order, body
        assert h.answered_at - final_at < WAKE_SLACK_S, f"answered {h.answered_at - final_at:.2f} s after release.lua"
    finally:
        fail_back(shard, old)
