"""A consumer pauses its partitions while a step of a batch retries (Redis or MySQL away),
so that nothing new flows in. librdkafka keeps a partition's pause through a rebalance:
a partition revoked while paused and given back later stays paused unless resumed, and
its orders would never be persisted again (seen in the Redis chaos scenarios R1 and R3:
thousands of orders left PROCESSING after a consumer's claim retried through a rebalance).

Here the only consumer B retries a step behind a silent Redis (a proxy that stops
answering) while a second consumer C joins: the rebalance revokes every partition from B,
which gets half back, paused again because it still retries. Redis answers again, B's
retry ends and it resumes what it holds. C leaves: B gets every partition back, among them
the half it had paused before the first rebalance. Every order sold after that must reach
MySQL."""

import re

from sales import order_rows

from stack import Consumer, poll_until, write_conf
from stallproxy import StallProxy

CONSUMER = {
    "consumer.batch-size": "10",
    "consumer.batch-timeout-ms": "5",
    "consumer.retry-max-ms": "200",
    "consumer.metrics-port": "0",
}


# Which of a batch's steps on Redis meets the stall first depends on where the pipeline is:
# the claim of the next batch, or the coupons or the finalize of the one written meanwhile
# (pipeline.c). Each retries the same way, with the partitions paused.
REDIS_STEP_RETRIED = re.compile(r"(claim|publish coupons|finalize) failed: .*; retrying")


def own_consumer(tmp_path, name, overrides):
    d = tmp_path / name
    d.mkdir()
    return Consumer(write_conf(d / "seckill.conf", dict(CONSUMER, **overrides)), d)


def times_assigned(c):
    return c.log_text(since_start=True).count(" assigned ")


def sell(api, ids, activity_id, n):
    """n orders, one request at a time: each is its own Kafka batch, and keyless orders
    change partition with every batch, so they reach every partition."""
    accepted = {}
    for _ in range(n):
        user = ids()
        r = api.execute(user, activity_id)
        assert r.code == 200, repr(r)
        accepted[r["orderNo"]] = user
    return accepted


def test_partitions_paused_during_a_retry_are_fetched_when_given_back(conf, gateway, api, ctl, mysql,
                                                                        ids, tmp_path):
    sale = ctl.create_sale(stock=10000)
    a = sale.activity_id
    proxy = StallProxy(conf.get("redis.host"), conf.get("redis.port"))
    b = own_consumer(tmp_path, "b", {"redis.port": str(proxy.port)})
    c = own_consumer(tmp_path, "c", {})
    try:
        b.start()
        poll_until(lambda: times_assigned(b) >= 1, 60, "B to get the partitions")
        sold = sell(api, ids, a, 20)
        poll_until(lambda: set(sold) <= set(order_rows(mysql, a)), 60, "B to persist the first orders")

        proxy.stall()
        sold.update(sell(api, ids, a, 20))
        poll_until(lambda: REDIS_STEP_RETRIED.search(b.log_text(since_start=True)), 30,
                   "B's step on Redis to retry behind the silent Redis")
        c.start()
        poll_until(lambda: times_assigned(b) >= 2 and times_assigned(c) >= 1, 60,
                   "the rebalance for C while B retries")
        proxy.resume()
        poll_until(lambda: set(sold) <= set(order_rows(mysql, a)), 60,
                   "the orders sold while Redis was silent")

        assert c.stop() == 0
        poll_until(lambda: times_assigned(b) >= 3, 60, "B to get every partition back")
        later = sell(api, ids, a, 60)
        poll_until(lambda: set(later) <= set(order_rows(mysql, a)), 30,
                   "the orders sold after B got its paused partitions back")
        rows = order_rows(mysql, a)
        sold.update(later)
        assert {o: rows[o] for o in sold} == sold
        assert len(rows) == len(sold), "an order persisted that no client was told about"
        assert b.stop() == 0
    finally:
        proxy.close()
        b.finish()
        c.finish()
