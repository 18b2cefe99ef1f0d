"""Status pushed, not polled (issue 15 item 4): GET /seckill/result and
GET /seckill/orders/{orderNo} with wait=N hold the answer until the order is final, woken
by the SPUBLISH of the script that ends it (the consumer's finalize, the gateway's rollback
and the reaper's expiry), or answer its status at the deadline; bounded by
http.max-waiting; a client that hangs up while held leaves nothing behind."""

import socket
import time

import pytest

from longpoll import WAKE_SLACK_S, Held, release, stuck_order
from stack import Consumer, poll_until
from gatewayhttp import gateway_metrics

WAITING = "seckill_longpoll_waiting"
WAKEUPS = "seckill_longpoll_wakeups_total"
EXPIRED = "seckill_longpoll_expired_total"
GONE = "seckill_longpoll_gone_total"
REFUSED = "seckill_longpoll_refused_total"

# A short reservation timeout, for the reaper's expiry (and what config.c asks to go with it).
CONF_OVERRIDES = {
    "redis.timeout-ms": "300",
    "kafka.producer.message.timeout.ms": "1000",
    "http.request-timeout-ms": "2500",
    "seckill.pre-reduce-timeout": "3",
    "seckill.reaper-interval-ms": "200",
}


def metric(port, name):
    return gateway_metrics(port).get(name, 0)


def waiting(port, n):
    poll_until(lambda: metric(port, WAITING) == n, 20, f"{n} held requests on the gateway")


@pytest.fixture(scope="module")
def sale(ctl, gateway):
    return ctl.create_sale(1000, start="-1m", end="+50m")  # stuck orders are "accepted" up to 1 s back


def test_a_held_request_is_answered_success_as_soon_as_the_consumer_persists(
        gateway, conf, ctl, redis, mysql, sale, api, ids, logdir):
    """The consumer is stopped while the orders are accepted (durably in Kafka, PROCESSING
    in Redis), so the held requests can only be answered by the finalize of the consumer
    started afterwards: within moments of the status turning SUCCESS, long before the
    deadline (at the deadline it would be SUCCESS too, read then, but 20 s late)."""
    a = sale.activity_id
    consumer = Consumer(conf, logdir)
    port = conf.http_port
    u1, u2 = ids(), ids()
    r1, r2 = api.execute(u1, a), api.execute(u2, a)
    assert r1.code == 200 and r2.code == 200, (r1, r2)
    order = r1["orderNo"]
    assert api.order_status(order) == "PROCESSING"
    wakeups = metric(port, WAKEUPS)
    by_order = Held(port, f"/seckill/orders/{order}?wait=20")
    by_user = Held(port, f"/seckill/result?userId={u2}&activityId={a}&wait=20")
    by_order.start()
    by_user.start()
    waiting(port, 2)
    consumer.start()
    try:
        def final():
            s = [redis("HGET", conf.key("orders", a), o) for o in (order, r2["orderNo"])]
            return s == ["SUCCESS", "SUCCESS"] and time.monotonic()
        success_at = poll_until(final, 60, "both orders SUCCESS in Redis", interval=0.05)
        code, body = by_order.result()
        assert code == 200 and body["status"] == "SUCCESS" and body["orderNo"] == order, body
        code, body = by_user.result()
        assert code == 200 and body == {"success": True, "userId": u2, "activityId": a,
                                        "orderNo": r2["orderNo"], "status": "SUCCESS"}, body
        for h in (by_order, by_user):
            late = h.answered_at - success_at
            assert late < WAKE_SLACK_S, f"{h.path}: answered {late:.2f} s after the order was SUCCESS"
            assert h.answered_at - h.sent_at < 15, f"{h.path}: held {h.answered_at - h.sent_at:.1f} s of 20"
        assert mysql.count(f"SELECT COUNT(*) FROM seckill_order WHERE order_no = '{order}'") == 1
        assert metric(port, WAITING) == 0
        assert metric(port, WAKEUPS) >= wakeups + 2
    finally:
        consumer.finish()


def test_a_held_request_on_an_expired_order_is_answered_failed(gateway, conf, api, redis, sale, ids):
    """The reaper expires a reservation that never reached Kafka (release.lua): the held
    request learns FAILED from its publish, not at its deadline."""
    a = sale.activity_id
    port = conf.http_port
    r = api.execute(ids(), a)
    assert r.code == 200, repr(r)
    node = (int(r["orderNo"].split("-")[0]) >> 12) & 1023
    # The gateway's own node, accepted 1 s ago: its reaper expires it in about 2 s
    # (pre-reduce-timeout 3 s), as a reservation whose produce never happened.
    order = stuck_order(redis, conf, a, ids(), accepted_ms=int(time.time() * 1000) - 1000, node=node)
    h = Held(port, f"/seckill/orders/{order}?wait=25")
    h.start()
    code, body = h.result()
    assert code == 200 and body["status"] == "FAILED", body
    assert redis("HGET", conf.key("orders", a), order) == "FAILED"
    assert h.answered_at - h.sent_at < 6, f"answered after {h.answered_at - h.sent_at:.1f} s of 25"


def test_news_lost_while_the_subscriber_reconnects_is_read_again(gateway, conf, redis, sale, ids):
    """The gateway's subscriber connection is killed and the order rolled back before the
    gateway has subscribed again: the message is lost, and the status read after the
    resubscribe answers the held request, long before its deadline."""
    a = sale.activity_id
    port = conf.http_port
    order = stuck_order(redis, conf, a, ids())
    h = Held(port, f"/seckill/orders/{order}?wait=20")
    h.start()
    channel = f"seckill:final:{{{a}}}"
    poll_until(lambda: redis("PUBSUB", "SHARDNUMSUB", channel)[1] >= 1, 20, "the gateway's subscription")
    waiting(port, 1)
    assert redis("CLIENT", "KILL", "TYPE", "pubsub") >= 1
    killed_at = time.monotonic()
    release(redis, conf, a, order)
    code, body = h.result(30)
    assert code == 200 and body["status"] == "FAILED", body
    assert h.answered_at - killed_at < 5, f"answered {h.answered_at - killed_at:.1f} s after the loss, wait was 20 s"


def test_at_the_deadline_the_current_status_is_answered(gateway, conf, redis, sale, ids):
    """A wait longer than http.request-timeout-ms (2.5 s here) is not cut by it."""
    a = sale.activity_id
    port = conf.http_port
    user = ids()
    order = stuck_order(redis, conf, a, user)
    expired = metric(port, EXPIRED)
    for path in (f"/seckill/orders/{order}?wait=4", f"/seckill/result?userId={user}&activityId={a}&wait=4"):
        h = Held(port, path)
        h.start()
        code, body = h.result()
        held = h.answered_at - h.sent_at
        assert code == 200 and body["status"] == "PROCESSING" and body["orderNo"] == order, body
        assert 3.9 <= held < 5.0, f"{path}: answered after {held:.2f} s, wait was 4 s"
    assert metric(port, EXPIRED) == expired + 2
    assert metric(port, WAITING) == 0
    release(redis, conf, a, order)


def test_a_wait_longer_than_the_idle_timeout_is_not_cut(gateway_with, conf, redis, sale, ids):
    """evhttp's own connection timeout (http.idle-timeout, 1 s here) does not run while a
    request awaits its answer: a 3 s wait is answered at its deadline, on its connection."""
    a = sale.activity_id
    g = gateway_with(dict(CONF_OVERRIDES, **{"http.idle-timeout": "1"}))
    order = stuck_order(redis, conf, a, ids())
    h = Held(g.conf.http_port, f"/seckill/orders/{order}?wait=3")
    h.start()
    code, body = h.result(10)
    assert code == 200 and body["status"] == "PROCESSING", body
    assert 2.9 <= h.answered_at - h.sent_at < 4.0, f"answered after {h.answered_at - h.sent_at:.2f} s"
    release(redis, conf, a, order)


def test_a_final_or_unknown_order_is_answered_at_once(gateway, conf, api, redis, sale, ids):
    a = sale.activity_id
    order = stuck_order(redis, conf, a, ids())
    redis("HSET", conf.key("orders", a), order, "FAILED")
    for path, code, status in ((f"/seckill/orders/{order}?wait=30", 200, "FAILED"),
                               (f"/seckill/orders/{order[:-len(str(a))]}{a + 999999}?wait=30", 404, "NOT_FOUND"),
                               (f"/seckill/result?userId={ids()}&activityId={a}&wait=30", 404, "NOT_FOUND")):
        t0 = time.monotonic()
        r = api.get(path)
        assert time.monotonic() - t0 < 1.0, f"{path} was held"
        assert r.code == code and r.get("status") == status, repr(r)


@pytest.mark.parametrize("value", ["-1", "31", "abc", "", "1.5", "0x5", "100000000000000000000"])
def test_bad_wait_values_are_refused(gateway, api, sale, value):
    for path in (f"/seckill/orders/1-{sale.activity_id}?wait={value}",
                 f"/seckill/result?userId=5&activityId={sale.activity_id}&wait={value}"):
        r = api.get(path)
        assert r.code == 400 and r["status"] == "INVALID", repr(r)
        assert "wait must be a whole number of seconds from 0 to 30" in r["message"], repr(r)
    r = api.get(f"/seckill/orders/1-{sale.activity_id}?wait=1&wait=2")
    assert r.code == 400 and "wait" in r["message"], repr(r)


def test_beyond_max_waiting_503_and_zero_turns_long_polling_off(gateway_with, conf, redis, sale, ids):
    a = sale.activity_id
    g = gateway_with(dict(CONF_OVERRIDES, **{"http.max-waiting": "2"}))
    port = g.conf.http_port
    orders = [stuck_order(redis, conf, a, ids()) for _ in range(3)]
    held = [Held(port, f"/seckill/orders/{o}?wait=20") for o in orders[:2]]
    for h in held:
        h.start()
    waiting(port, 2)
    third = Held(port, f"/seckill/orders/{orders[2]}?wait=20")
    third.start()
    code, body = third.result(10)
    assert code == 503 and body["status"] == "UNAVAILABLE", body
    assert "http.max-waiting" in body["message"], body
    assert third.headers.get("Retry-After") == "1", third.headers
    assert metric(port, REFUSED) == 1
    # Without wait the same order is answered as always.
    plain = Held(port, f"/seckill/orders/{orders[2]}")
    plain.start()
    assert plain.result(10) == (200, {"success": True, "orderNo": orders[2], "activityId": a, "status": "PROCESSING"})
    for o in orders:
        release(redis, conf, a, o)
    assert [h.result(10)[1]["status"] for h in held] == ["FAILED", "FAILED"]

    off = gateway_with(dict(CONF_OVERRIDES, **{"http.max-waiting": "0"}))
    order = stuck_order(redis, conf, a, ids())
    h = Held(off.conf.http_port, f"/seckill/orders/{order}?wait=20")
    h.start()
    code, body = h.result(10)
    assert code == 200 and body["status"] == "PROCESSING", body
    assert h.answered_at - h.sent_at < 1.0, "http.max-waiting = 0 still held the request"
    release(redis, conf, a, order)


def test_one_address_cannot_take_every_held_request(gateway_with, conf, redis, sale, ids):
    """http.max-waiting-per-client: beyond it, 429 for that address alone; another address
    is still held, and the first one's room comes back as its requests end."""
    a = sale.activity_id
    g = gateway_with(dict(CONF_OVERRIDES, **{"http.max-waiting-per-client": "2", "http.trust-forwarded-for": "true"}))
    port = g.conf.http_port
    mine, theirs = {"X-Forwarded-For": "198.51.100.7"}, {"X-Forwarded-For": "198.51.100.8"}
    orders = [stuck_order(redis, conf, a, ids()) for _ in range(4)]
    held = [Held(port, f"/seckill/orders/{o}?wait=20", mine) for o in orders[:2]]
    for h in held:
        h.start()
    waiting(port, 2)
    refused = metric(port, REFUSED)
    third = Held(port, f"/seckill/orders/{orders[2]}?wait=20", mine)
    third.start()
    code, body = third.result(10)
    assert code == 429 and body["status"] == "RATE_LIMITED", body
    assert "http.max-waiting-per-client" in body["message"], body
    assert third.headers.get("Retry-After") == "1", third.headers
    assert metric(port, REFUSED) == refused + 1
    other = Held(port, f"/seckill/orders/{orders[3]}?wait=20", theirs)
    other.start()
    waiting(port, 3)
    release(redis, conf, a, orders[0])
    assert held[0].result(10)[1]["status"] == "FAILED"
    waiting(port, 2)
    again = Held(port, f"/seckill/orders/{orders[2]}?wait=20", mine)
    again.start()
    waiting(port, 3)
    for o in orders[1:]:
        release(redis, conf, a, o)
    assert [h.result(10)[1]["status"] for h in (held[1], again, other)] == ["FAILED"] * 3


def test_a_client_that_hangs_up_while_held_is_forgotten(gateway_with, conf, redis, sale, ids):
    """The socket closes under a held request: the gateway notices at once (the gauge goes
    back), frees it once (ASan checks at the gateway's exit), and a publish for that order
    afterwards finds nobody to answer."""
    a = sale.activity_id
    g = gateway_with(CONF_OVERRIDES)
    port = g.conf.http_port
    orders = [stuck_order(redis, conf, a, ids()) for _ in range(5)]
    socks = []
    for o in orders:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(f"GET /seckill/orders/{o}?wait=20 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        socks.append(s)
    waiting(port, 5)
    for s in socks[:4]:
        s.close()
    waiting(port, 1)
    assert metric(port, GONE) == 4
    for o in orders:
        release(redis, conf, a, o)
    data = b""
    while b"\r\n\r\n" not in data or b"}" not in data:
        chunk = socks[4].recv(4096)
        assert chunk, f"the connection still held closed without an answer: {data!r}"
        data += chunk
    socks[4].close()
    assert data.startswith(b"HTTP/1.1 200") and b'"status":"FAILED"' in data, data
    waiting(port, 0)
    r = Held(port, "/healthz")
    r.start()
    assert r.result(10)[0] == 200


def test_shutdown_answers_every_held_request_with_its_status(gateway_with, conf, redis, sale, ids):
    a = sale.activity_id
    g = gateway_with(CONF_OVERRIDES)
    port = g.conf.http_port
    orders = [stuck_order(redis, conf, a, ids()) for _ in range(3)]
    held = [Held(port, f"/seckill/orders/{o}?wait=30") for o in orders]
    for h in held:
        h.start()
    waiting(port, 3)
    t0 = time.monotonic()
    g.terminate()
    for h, o in zip(held, orders):
        code, body = h.result(10)
        assert code == 200 and body["status"] == "PROCESSING" and body["orderNo"] == o, body
        assert h.headers.get("Connection") == "close", h.headers
        assert h.answered_at - t0 < 2.0, "a held request waited for its deadline at shutdown"
    assert g.wait(30) == 0
    for o in orders:
        release(redis, conf, a, o)
