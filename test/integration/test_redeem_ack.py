"""A redemption answered 200 is never undone (issue 11 item 4).

POST /coupons/{id}/use marks the coupon used in Redis, then sends coupon.used through
Kafka to MySQL; when the delivery fails the mark is undone so the coupon can be used
again. That undo is only right when nobody was told "redeemed". Two ways a 200 used to go
out before the delivery was settled:

- seckill.order.reply-after-ack=false answered the redemption before the ack;
- the same orderRef asked again while the first delivery was still pending got the
  "same answer again" at once, 200, from the Redis mark alone.

Either way the coupon then became usable again and a second checkout got the discount.

The failing delivery comes from a gateway of its own whose Kafka is an address nobody
listens on (a short message timeout): the shared broker is never touched. The coupon
itself is won and, at the end, redeemed through the module's normal gateway and consumer,
so MySQL ends agreeing with Redis."""

import threading

import pytest

from sales import won_coupon

from stack import DeafKafkaGateway, free_port, poll_until, write_conf
from gatewayhttp import Api


@pytest.fixture
def deaf_gateway(tmp_path, services):
    started = []

    def start(overrides):
        d = tmp_path / f"deaf{len(started)}"
        d.mkdir()
        settings = {"kafka.brokers": f"127.0.0.1:{free_port()}",
                    "kafka.producer.message.timeout.ms": "1000"}
        settings.update(overrides)
        g = DeafKafkaGateway(write_conf(d / "seckill.conf", settings), d)
        started.append(g)
        return g.start()

    yield start
    for g in started:
        g.finish(timeout=int(g.conf.get("http.request-timeout-ms")) / 1000 + 20)


def use(api, uc_id, user, ref, amount="100.00"):
    return api.post(f"/coupons/{uc_id}/use", json={"userId": user, "orderAmount": amount, "orderRef": ref})


def delivery_failed(gw, uc_id):
    return any(line for line in gw.log_text().splitlines()
               if f"user coupon {uc_id} order" in line and "kafka delivery failed" in line)


def mysql_agrees(mysql, redis, key, uc_id, ref):
    """The coupon ends used by `ref` in Redis and in MySQL."""
    assert redis("HGET", key, f"{uc_id}:used").startswith(ref + "|")
    sql = f"SELECT status, order_ref FROM user_coupon WHERE id = {uc_id}"
    poll_until(lambda: mysql.rows(sql)[0][0] == "USED", 30, f"user coupon {uc_id} to be USED in MySQL")
    assert mysql.rows(sql) == [["USED", ref]]


def test_reply_before_ack_never_answers_a_redemption_that_is_then_undone(
        deaf_gateway, api, gateway, consumer, ctl, mysql, redis, ids):
    user, uc_id, key = won_coupon(ctl, api, mysql, redis, ids)
    deaf = deaf_gateway({"seckill.order.reply-after-ack": "false"})

    first = use(Api(deaf.base_url), uc_id, user, f"first-{user}")
    assert first.code in (200, 503), repr(first)
    poll_until(lambda: delivery_failed(deaf, uc_id), 15, "the redemption's delivery to fail")

    second = use(api, uc_id, user, f"second-{user}")
    assert not (first.code == 200 and second.code == 200), (
        f"one coupon discounted two checkouts: {first!r} then, after the failed delivery, {second!r}")
    # Redemptions wait for Kafka whatever the flag: the failed one was answered 503 and
    # used nothing, so the next checkout could have the coupon.
    assert first.code == 503 and first.status == "UNAVAILABLE", repr(first)
    assert second.code == 200, repr(second)
    mysql_agrees(mysql, redis, key, uc_id, f"second-{user}")


def test_same_ref_while_the_delivery_is_pending_is_not_answered_200(
        deaf_gateway, api, gateway, consumer, ctl, mysql, redis, ids):
    user, uc_id, key = won_coupon(ctl, api, mysql, redis, ids)
    deaf = deaf_gateway({})
    ref = f"checkout-{user}"

    held = {}
    t = threading.Thread(target=lambda: held.update(r=use(Api(deaf.base_url), uc_id, user, ref)))
    t.start()
    try:
        poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:used") == 1, 10, "the redemption's mark in Redis")
        # The checkout asks again (a client retry, another gateway) while Kafka has not
        # answered the first request.
        again = use(api, uc_id, user, ref)
    finally:
        t.join(30)
    first = held["r"]
    assert first.code == 503 and first.status == "UNAVAILABLE", repr(first)
    poll_until(lambda: delivery_failed(deaf, uc_id), 15, "the redemption's delivery to fail")

    # The undo is sent as the failure is logged and answered; it lands a moment later.
    poll_until(lambda: redis("HGET", key, f"{uc_id}:used") is None, 10, "the failed redemption undone")
    assert again.code != 200, (
        f"answered {again!r} while the delivery was pending, then the redemption was undone: "
        "the coupon is usable again")
    assert again.code == 503 and again.status == "UNAVAILABLE", repr(again)
    assert "Retry-After" in again.headers, repr(again)
    assert redis("HEXISTS", key, f"{uc_id}:pending") == 0

    # Retried once the first attempt is over, the same checkout redeems it for good.
    done = use(api, uc_id, user, ref)
    assert done.code == 200 and done["discount"] == "5.00", repr(done)
    poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:pending") == 0, 10, "the ack to clear the pending mark")
    repeat = use(api, uc_id, user, ref)
    assert repeat.code == 200 and repeat["payable"] == "95.00", repr(repeat)
    mysql_agrees(mysql, redis, key, uc_id, ref)


def test_a_redemption_no_replica_acknowledged_is_undone(gateway_with, api, gateway, consumer, ctl, mysql, redis, ids):
    """With redis.wait-replicas the used mark must be on a replica before the redemption
    goes to Kafka: a failover could otherwise lose the mark while the checkout holds the
    discount, and the coupon would discount another checkout. The single Redis has no
    replica, so WAIT counts none: 503, the mark undone, nothing in Kafka."""
    user, uc_id, key = won_coupon(ctl, api, mysql, redis, ids)
    waiting = gateway_with({"redis.wait-replicas": "1"})
    r = use(Api(waiting.base_url), uc_id, user, f"lonely-{user}")
    assert r.code == 503 and r.status == "UNAVAILABLE" and "replicated" in r["message"], repr(r)
    assert "Retry-After" in r.headers, repr(r)
    poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:used") == 0, 10, "the redemption's mark undone")
    second = use(api, uc_id, user, f"second-{user}")
    assert second.code == 200, repr(second)
    mysql_agrees(mysql, redis, key, uc_id, f"second-{user}")


def test_a_used_mark_redis_lost_is_written_again_by_the_consumer(api, gateway, consumer, ctl, mysql, redis, ids):
    """Redis loses a redemption's used mark after the checkout got its 200 (a failover
    without redis.wait-replicas, a restart from an AOF a second behind): once the consumer
    has the redemption in MySQL it writes the mark again, and another checkout is refused
    rather than discounted a second time."""
    user, uc_id, key = won_coupon(ctl, api, mysql, redis, ids)
    consumer.stop()
    try:
        first = use(api, uc_id, user, f"first-{user}")
        assert first.code == 200, repr(first)
        poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:pending") == 0, 10, "the ack to clear the pending mark")
        assert redis("HDEL", key, f"{uc_id}:used") == 1
    finally:
        consumer.start()
    poll_until(lambda: mysql.scalar(f"SELECT status FROM user_coupon WHERE id = {uc_id}") == "USED", 30,
               "the redemption in MySQL")
    poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:used") == 1, 10, "the used mark written again")
    second = use(api, uc_id, user, f"second-{user}")
    assert second.code == 409 and second.status == "USED", repr(second)
    mysql_agrees(mysql, redis, key, uc_id, f"first-{user}")
