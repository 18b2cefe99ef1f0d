"""Refunds under faults (issue 27 item 2 a): the consumer killed (SIGKILL) while a stream of
redemptions and refunds of the same coupons is in flight, and a gateway killed mid-refund.
Afterwards nothing is lost and nothing is given back twice: every use and refund answered
200 is applied once in MySQL (the row ends as the last answered call left it), the
coupon's used_count equals its USED rows, no event is dead-lettered, and Redis agrees with
MySQL."""

import random
import threading

import pytest

from gatewayhttp import Api
from stack import DeafKafkaGateway, free_port, poll_until, write_conf

USERS = 24           # coupons in the stream, one user each
STEPS = 5            # use, refund, use, refund, use: each coupon's calls, in order
THREADS = 6
KILLED_REFUNDS = 12  # coupons refunded while their gateway is killed

CONF_OVERRIDES = {
    # Small batches, so that a kill lands between the MySQL commit and the offset commit of
    # some batch and a replay follows.
    "consumer.batch-size": "5",
    "kafka.consumer.session.timeout.ms": "6000",
    # A killed gateway's pending marks lapse after the request timeout: a short one keeps
    # the retries short (the producer's message timeout must stay within it).
    "http.request-timeout-ms": "5000",
    "kafka.producer.message.timeout.ms": "3000",
}


@pytest.fixture(scope="module")
def coupon(ctl):
    return ctl.create_id("coupon", "create", "--name", "refund chaos", "--type", "CASH", "--amount", "5.00",
                         "--min-order", "10.00", "--total", USERS + KILLED_REFUNDS + 8, "--start", "-1m",
                         "--end", "+1d")


def grant(ctl, redis, coupon, user):
    uc_id = ctl.create_id("coupon", "grant", "--coupon", coupon, "--user", user)
    key = f"seckill:ucoupon:{{u{user}}}"
    poll_until(lambda: redis("HEXISTS", key, str(uc_id)) == 1, 20, "the coupon record in Redis")
    return uc_id


def call(api, kind, uc_id, user, ref):
    body = {"userId": user, "orderRef": ref}
    if kind == "use":
        body["orderAmount"] = "100.00"
    return api.post(f"/coupons/{uc_id}/{kind}", json=body)


def until_answered(port, kind, uc_id, user, ref, timeout=60):
    """The call retried, as a checkout would, while it is answered 503 (still being recorded,
    the consumer or the gateway away) or not at all (the gateway killed): its 200."""
    def attempt():
        try:
            r = call(Api(f"http://127.0.0.1:{port}"), kind, uc_id, user, ref)
        except OSError:
            return None
        assert r.code in (200, 503), f"{kind} {uc_id} {ref}: {r!r}"
        return r if r.code == 200 else None
    return poll_until(attempt, timeout, f"{kind} of user coupon {uc_id} by {ref} to be answered 200")


def expected_rows(history):
    """What MySQL must hold for each coupon: (status, order_ref, refunded_ref) after the
    calls answered 200, in their order."""
    out = {}
    for uc_id, calls in history.items():
        used = [ref for kind, ref in calls if kind == "use"]
        refunded = [ref for kind, ref in calls if kind == "refund"]
        last_kind, last_ref = calls[-1]
        out[uc_id] = (["USED", last_ref] if last_kind == "use" else ["UNUSED", "NULL"]) + \
            [refunded[-1] if refunded else "NULL"]
        assert len(used) - len(refunded) in (0, 1)
    return out


def mysql_rows(mysql, ids):
    rows = mysql.rows("SELECT id, status, IFNULL(order_ref, 'NULL'), IFNULL(refunded_ref, 'NULL') "
                      f"FROM user_coupon WHERE id IN ({','.join(map(str, ids))})")
    return {int(r[0]): r[1:] for r in rows}


def settled(mysql, redis, api, coupon, users, expected):
    """MySQL reaches the expected rows; then the counters equal the rows and Redis agrees."""
    poll_until(lambda: mysql_rows(mysql, expected) == expected, 90, "MySQL to hold every answered call")
    issued, used = (int(v) for v in
                    mysql.rows(f"SELECT issued_count, used_count FROM coupon WHERE id = {coupon}")[0])
    by_status = dict((s, int(n)) for s, n in mysql.rows(
        f"SELECT status, COUNT(*) FROM user_coupon WHERE coupon_id = {coupon} GROUP BY status"))
    assert used == by_status.get("USED", 0), (used, by_status)
    assert issued == sum(by_status.values()), (issued, by_status)
    for uc_id, user in users.items():
        listed = api.get("/coupons", params={"userId": user})
        shown = next(c for c in listed["coupons"] if c["userCouponId"] == uc_id)
        assert [shown["status"], shown.get("orderRef", "NULL")] == expected[uc_id][:2], (uc_id, shown)


def nothing_dead_lettered(consumer):
    bad = [line for line in consumer.log_text().splitlines()
           if "inconsistent with MySQL" in line or ") dead-lettered:" in line]
    assert not bad, "\n".join(bad[:10])


def test_consumer_killed_amid_uses_and_refunds(conf, ctl, api, gateway, consumer, mysql, redis, coupon, ids):
    users = {grant(ctl, redis, coupon, u): u for u in (ids() for _ in range(USERS))}
    rng = random.Random(27)
    plan = {uc_id: STEPS - rng.randrange(2) for uc_id in users}   # some end used, some refunded
    history = {uc_id: [] for uc_id in users}
    failures = []

    def worker(ucs):
        try:
            for step in range(STEPS):
                for uc_id in ucs:
                    if step >= plan[uc_id]:
                        continue
                    kind, ref = ("use", f"c{step // 2}-{uc_id}") if step % 2 == 0 else \
                        ("refund", f"c{step // 2}-{uc_id}")
                    until_answered(conf.http_port, kind, uc_id, users[uc_id], ref)
                    history[uc_id].append((kind, ref))
        except BaseException as e:  # reported by the main thread
            failures.append(e)

    ucs = sorted(users)
    threads = [threading.Thread(target=worker, args=(ucs[i::THREADS],), daemon=True) for i in range(THREADS)]
    for t in threads:
        t.start()
    applied = f"SELECT COUNT(*) FROM user_coupon WHERE coupon_id = {coupon} AND event_seq > 0"
    for at_least in (USERS // 3, USERS):
        poll_until(lambda: mysql.count(applied) >= at_least, 60, f"{at_least} coupons' events in MySQL",
                   interval=0.01)
        consumer.kill9()
        consumer.start()
    for t in threads:
        t.join(120)
    assert not failures, failures
    assert all(not t.is_alive() for t in threads)

    settled(mysql, redis, api, coupon, users, expected_rows(history))
    nothing_dead_lettered(consumer)


def test_gateway_killed_mid_refund(conf, tmp_path, ctl, api, gateway, consumer, mysql, redis, coupon, ids):
    users = {grant(ctl, redis, coupon, u): u for u in (ids() for _ in range(KILLED_REFUNDS))}
    for uc_id, user in users.items():
        until_answered(conf.http_port, "use", uc_id, user, f"chk-{uc_id}")
    poll_until(lambda: mysql.count(f"SELECT COUNT(*) FROM user_coupon WHERE id IN ({','.join(map(str, users))}) "
                                   "AND status = 'USED'") == len(users), 30, "the uses in MySQL")
    ucs = sorted(users)
    deaf_half, live_half = ucs[: len(ucs) // 2], ucs[len(ucs) // 2:]

    # Half are refunded through a gateway whose broker never answers, killed while they
    # wait: in Redis the refunds are done, in Kafka there is nothing.
    d = tmp_path / "deaf"
    d.mkdir()
    deaf = DeafKafkaGateway(write_conf(d / "seckill.conf", {
        "kafka.brokers": f"127.0.0.1:{free_port()}", "kafka.producer.message.timeout.ms": "3000",
        "http.request-timeout-ms": "5000"}), d)
    deaf.start()
    threads = [threading.Thread(target=lambda u=u: _quietly(call, Api(deaf.base_url), "refund", u, users[u],
                                                           f"chk-{u}"), daemon=True) for u in deaf_half]
    for t in threads:
        t.start()
    poll_until(lambda: all(redis("HEXISTS", f"seckill:ucoupon:{{u{users[u]}}}", f"{u}:refunded") for u in deaf_half),
               20, "the deaf gateway's refunds in Redis")
    deaf.kill9()

    # The other half through the module's gateway, killed as the first of them lands in
    # Redis: some were answered, some produced and not answered, some not produced.
    threads += [threading.Thread(target=lambda u=u: _quietly(call, api, "refund", u, users[u], f"chk-{u}"),
                                 daemon=True) for u in live_half]
    for t in threads[len(deaf_half):]:
        t.start()
    poll_until(lambda: any(redis("HEXISTS", f"seckill:ucoupon:{{u{users[u]}}}", f"{u}:refunded")
                           for u in live_half), 20, "a refund in Redis", interval=0.005)
    gateway.kill9()
    for t in threads:
        t.join(30)
    gateway.start()

    # Every checkout retries until answered: each refund ends answered 200 exactly once in
    # effect, in MySQL as in Redis.
    for uc_id, user in users.items():
        r = until_answered(conf.http_port, "refund", uc_id, user, f"chk-{uc_id}", timeout=60)
        assert r["orderRef"] == f"chk-{uc_id}", repr(r)
    expected = {uc_id: ["UNUSED", "NULL", f"chk-{uc_id}"] for uc_id in users}
    settled(mysql, redis, api, coupon, users, expected)
    nothing_dead_lettered(consumer)
    # And each coupon is usable again, once.
    for uc_id, user in users.items():
        assert until_answered(conf.http_port, "use", uc_id, user, f"again-{uc_id}")["discount"] == "5.00"
    settled(mysql, redis, api, coupon, users, {u: ["USED", f"again-{u}", f"chk-{u}"] for u in users})


def _quietly(fn, *args):
    try:
        fn(*args)
    except OSError:
        pass  # its gateway was killed: the checkout retries later
