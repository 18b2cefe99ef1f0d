"""A flash sale: thousands of users race for a few hundred coupons over many keep-alive
connections. Exactly the stock is sold, one order per user, each answered order ends up
in MySQL, and Redis and MySQL agree (I1-I5)."""

import random
import time

import pytest

from sales import order_rows, wait_for_consumer
from gatewayhttp import Attempt, describe_failures, run_load

STOCK = 500
USERS = 2000
REPEAT_SHARE = 0.2
THREADS = 64


@pytest.fixture(scope="module")
def sale(ctl, gateway, consumer):
    return ctl.create_sale(STOCK)


def test_flash_sale(conf, gateway, consumer, sale, ctl, mysql, redis):
    a = sale.activity_id
    base = int(time.time() * 1000) % 10**12 * 1000
    users = [base + i for i in range(1, USERS + 1)]
    rng = random.Random(a)
    repeaters = set(rng.sample(users, int(USERS * REPEAT_SHARE)))
    first = [Attempt(u, a) for u in users]
    rng.shuffle(first)

    def follow_up(attempt):
        if not attempt.repeat and attempt.user in repeaters:
            return Attempt(attempt.user, a, repeat=True)
        return None

    started = time.monotonic()
    done = run_load(conf.http_port, first, THREADS, follow_up=follow_up)
    elapsed = time.monotonic() - started
    print(f"\n{len(done)} requests in {elapsed:.1f}s ({len(done) / elapsed:.0f}/s)")

    assert len(done) == USERS + len(repeaters)
    errors = [x for x in done if x.error is not None]
    assert not errors, describe_failures(errors)
    server_errors = [x for x in done if x.reply.code >= 500]
    assert not server_errors, describe_failures(server_errors)

    firsts = {x.user: x for x in done if not x.repeat}
    repeats = [x for x in done if x.repeat]
    won = {u: x.reply["orderNo"] for u, x in firsts.items() if x.reply.code == 200}
    ok = [x for x in done if x.reply.code == 200]
    assert len(ok) == STOCK, f"{len(ok)} orders accepted for a stock of {STOCK}"
    assert len(won) == STOCK, "an accepted order was a repeat of a user who had been refused"
    assert len(set(won.values())) == STOCK, "two accepted orders share an order number"
    for x in ok:
        assert x.reply["success"] is True and x.reply["status"] == "PROCESSING", repr(x)

    for u, x in firsts.items():
        if u not in won:
            assert (x.reply.code, x.reply.status) == (409, "OUT_OF_STOCK"), repr(x)
    for x in repeats:
        if x.user in won:
            assert (x.reply.code, x.reply.status) == (409, "DUPLICATE"), repr(x)
            assert x.reply.get("orderNo") == won[x.user], repr(x)
        else:
            assert (x.reply.code, x.reply.status) == (409, "OUT_OF_STOCK"), repr(x)

    # The consumer persists every accepted order, and nothing else.
    wait_for_consumer(mysql, redis, conf, a, STOCK, consumer)
    rows = order_rows(mysql, a)
    assert set(rows) == set(won.values()), "MySQL orders differ from the accepted ones"
    assert len(set(rows.values())) == STOCK, "a user holds two orders"
    assert {rows[o]: o for o in rows} == won, "an order is filed under another user"

    assert redis("GET", conf.key("stock", a)) == "0"
    statuses = redis("HGETALL", conf.key("orders", a))
    statuses = dict(zip(statuses[::2], statuses[1::2]))
    assert set(statuses) == set(won.values())
    assert set(statuses.values()) == {"SUCCESS"}, {s for s in statuses.values()}

    assert mysql.count(f"SELECT sold_count FROM seckill_activity WHERE id = {a}") == STOCK
    issued = mysql.count(
        f"SELECT COUNT(*) FROM user_coupon uc JOIN seckill_order o ON uc.source_ref = o.order_no "
        f"WHERE o.activity_id = {a} AND uc.user_id = o.user_id AND uc.coupon_id = {sale.coupon_id}")
    assert issued == STOCK

    verify = ctl("verify", a)
    assert verify.rc == 0, repr(verify)
