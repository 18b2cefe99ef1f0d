"""A limit per user above one (issue 27 item 3; docs/api.md): a sale created with
`--per-user N` lets a user hold up to N orders, each in a slot of its own that the execute
script picks and MySQL holds once (UNIQUE(user_id, activity_id, user_slot)). The N+1st try
is refused DUPLICATE ("limit reached") with the user's first order; `GET /seckill/result`
lists every order of the user; a slot that Redis forgot (a failover) is not sold twice."""

import collections
import time

from gatewayhttp import Attempt, run_load
from sales import execute_script, wait_for_consumer
from stack import poll_until

CONF_OVERRIDES = {"consumer.lifecycle-interval-ms": "200", "seckill.reaper-interval-ms": "200",
                  "seckill.pre-reduce-timeout": "20"}
LIMIT = 3
ORDERNO_EPOCH_MS = 1704067200000


def buy(api, user, aid):
    r = api.execute(user, aid)
    assert r.code == 200, repr(r)
    return r["orderNo"]


def slots_in_mysql(mysql, aid, user):
    return dict((int(slot), no) for no, slot in mysql.rows(
        f"SELECT order_no, user_slot FROM seckill_order WHERE activity_id = {aid} AND user_id = {user}"))


def test_a_user_holds_up_to_the_limit_and_result_lists_them(ctl, api, mysql, redis, conf, ids, consumer):
    sale = ctl.create_sale(20, per_user=LIMIT)
    aid = sale.activity_id
    user, other = ids(), ids()
    orders = [buy(api, user, aid) for _ in range(LIMIT)]
    assert len(set(orders)) == LIMIT
    refused = api.execute(user, aid)
    assert refused.code == 409 and refused["status"] == "DUPLICATE", repr(refused)
    assert "as many orders" in refused["message"] and refused["orderNo"] == orders[0], repr(refused)
    assert buy(api, other, aid)  # another user's limit is their own
    wait_for_consumer(mysql, redis, conf, aid, expected_rows=LIMIT + 1, consumer=consumer)

    assert slots_in_mysql(mysql, aid, user) == {1: orders[0], 2: orders[1], 3: orders[2]}
    assert mysql.count(f"SELECT COUNT(*) FROM user_coupon WHERE user_id = {user} "
                       f"AND coupon_id = {sale.coupon_id}") == LIMIT
    fields = [str(user), f"{user}#2", f"{user}#3", f"{user}#4"]
    assert redis("HMGET", conf.key("users", aid), *fields) == orders + [None]

    def listed():
        r = api.get("/seckill/result", params={"userId": user, "activityId": aid})
        return r if r.code == 200 and all(o["status"] == "SUCCESS" for o in r["orders"]) else None

    r = poll_until(listed, 20, "the user's three orders SUCCESS in the result")
    assert r["orderNo"] == orders[-1] and r["status"] == "SUCCESS", repr(r)
    assert [o["orderNo"] for o in r["orders"]] == orders, repr(r)
    # Each order is the user's own to read; a sale of one per user answers as it always did.
    for no in orders:
        assert api.get(f"/seckill/orders/{no}").get("status") == "SUCCESS"
    single = ctl.create_sale(5)
    one = buy(api, user, single.activity_id)
    again = api.execute(user, single.activity_id)
    assert again.code == 409 and again["status"] == "DUPLICATE" and again["orderNo"] == one, repr(again)
    assert "orders" not in api.get("/seckill/result", params={"userId": user, "activityId": single.activity_id}).json
    listing = api.get(f"/seckill/activities/{aid}")
    assert listing["perUser"] == LIMIT, repr(listing)
    ctl.run_ok("verify", aid)


def test_a_burst_of_one_user_gets_exactly_the_limit(ctl, api, mysql, redis, conf, ids, consumer, gateway):
    """Forty tries of each of five users at once, over eight connections: each user gets
    exactly three orders, the others are refused, and the stock is what was sold."""
    sale = ctl.create_sale(100, per_user=LIMIT)
    aid = sale.activity_id
    users = [ids() for _ in range(5)]
    attempts = [Attempt(u, aid) for _ in range(40) for u in users]
    done = run_load(gateway.conf.http_port, attempts, threads=8)
    codes = collections.Counter((a.user, a.reply.code if a.reply else None) for a in done)
    for u in users:
        assert codes[(u, 200)] == LIMIT and codes[(u, 409)] == 40 - LIMIT, codes
    wait_for_consumer(mysql, redis, conf, aid, expected_rows=LIMIT * len(users), consumer=consumer)
    per_user = mysql.rows(f"SELECT user_id, COUNT(*), COUNT(DISTINCT user_slot), MAX(user_slot) "
                          f"FROM seckill_order WHERE activity_id = {aid} GROUP BY user_id")
    assert sorted(int(u) for u, *_ in per_user) == sorted(users)
    assert all((n, d, m) == (str(LIMIT), str(LIMIT), str(LIMIT)) for _, n, d, m in per_user), per_user
    assert redis("GET", conf.key("stock", aid)) == str(100 - LIMIT * len(users))
    ctl.run_ok("verify", aid)


def test_sold_out_answers_the_limit_or_sold_out(ctl, api, ids):
    sale = ctl.create_sale(LIMIT + 1, per_user=LIMIT)
    aid = sale.activity_id
    full, partial, late = ids(), ids(), ids()
    first = [buy(api, full, aid) for _ in range(LIMIT)]
    buy(api, partial, aid)
    r = api.execute(full, aid)
    assert r.code == 409 and r["status"] == "DUPLICATE" and r["orderNo"] == first[0], repr(r)
    for u in (partial, late):
        r = api.execute(u, aid)
        assert r.code == 409 and r["status"] == "OUT_OF_STOCK", repr(r)


def test_a_slot_redis_forgot_is_not_sold_twice(ctl, api, mysql, redis, conf, ids, consumer):
    """After a failover that lost writes, the promoted replica may not know a user's order in
    slot 2 that MySQL holds: the next purchase takes slot 2 again. MySQL keeps the first
    (UNIQUE(user, activity, slot)); the new order ends FAILED SUPERSEDED, the first is SUCCESS
    again under slot 2, and the user's next purchase takes slot 3."""
    sale = ctl.create_sale(10, per_user=LIMIT)
    aid = sale.activity_id
    user = ids()
    first = [buy(api, user, aid) for _ in range(2)]
    wait_for_consumer(mysql, redis, conf, aid, expected_rows=2, consumer=consumer)
    poll_until(lambda: api.order_status(first[1]) == "SUCCESS", 20, "the second order SUCCESS")
    # What a replica that never got the second order's writes holds.
    redis("HDEL", conf.key("users", aid), f"{user}#2")
    redis("HDEL", conf.key("orders", aid), first[1])
    redis("INCR", conf.key("stock", aid))
    redis("HINCRBY", conf.key("activity", aid), "sold", -1)

    again = buy(api, user, aid)
    poll_until(lambda: api.order_status(again) == "FAILED", 30, "the order in the forgotten slot FAILED")
    poll_until(lambda: api.order_status(first[1]) == "SUCCESS", 30, "the first order of slot 2 SUCCESS again")
    assert redis("HGET", conf.key("users", aid), f"{user}#2") == first[1]
    poll_until(lambda: mysql.rows(f"SELECT reason FROM seckill_order_failed WHERE order_no = '{again}'"),
               30, "the superseded order recorded")
    assert mysql.scalar(f"SELECT reason FROM seckill_order_failed WHERE order_no = '{again}'") == "SUPERSEDED"
    third = buy(api, user, aid)
    wait_for_consumer(mysql, redis, conf, aid, expected_rows=3, consumer=consumer)
    assert slots_in_mysql(mysql, aid, user) == {1: first[0], 2: first[1], 3: third}
    r = api.execute(user, aid)
    assert r.code == 409 and r["status"] == "DUPLICATE", repr(r)



def test_an_expired_order_frees_its_own_slot(ctl, gateway, consumer, api, redis, mysql, conf, ids):
    """A reservation in slot 2 that never reached Kafka (its gateway died) expires: the
    reaper frees slot 2 alone, MySQL records the failure under the user, the result lists
    it, and the user's next purchase takes slot 2 again."""
    sale = ctl.create_sale(10, start="-50s", end="+30m", per_user=LIMIT)
    aid = sale.activity_id
    user = ids()
    first = buy(api, user, aid)
    node = (int(first.split("-")[0]) >> 12) & 1023
    accepted_ms = int(time.time() * 1000) - 30_000
    lost = f"{((accepted_ms - ORDERNO_EPOCH_MS) << 22) | (node << 12) | 4095}-{aid}"
    execute_script(redis, conf, aid, user, lost, accepted_ms)
    assert redis("HGET", conf.key("users", aid), f"{user}#2") == lost

    def recorded():
        return mysql.rows(f"SELECT user_id, reason FROM seckill_order_failed WHERE order_no = '{lost}'")

    assert poll_until(recorded, 30, "the expired order recorded FAILED") == [[str(user), "EXPIRED"]]
    assert redis("HMGET", conf.key("users", aid), str(user), f"{user}#2") == [first, None]
    r = api.get("/seckill/result", params={"userId": user, "activityId": aid})
    assert {o["orderNo"]: (o["status"], o.get("reason")) for o in r["orders"]} == {
        first: (api.order_status(first), None), lost: ("FAILED", "EXPIRED")}, repr(r)
    again = buy(api, user, aid)
    assert redis("HGET", conf.key("users", aid), f"{user}#2") == again
    wait_for_consumer(mysql, redis, conf, aid, expected_rows=2, consumer=consumer)
    assert slots_in_mysql(mysql, aid, user) == {1: first, 2: again}
    ctl.run_ok("verify", aid)
