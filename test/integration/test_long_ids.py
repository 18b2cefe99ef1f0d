"""http.long-ids: user ids up to 2^63 - 1, Java's long, as the Spring design's clients send
them (19-digit snowflake ids), carried exactly from the request through Kafka to MySQL and
back to every read: the order, its result, the user's coupon and its redemption."""

from sales import wait_for_consumer
from stack import poll_until

CONF_OVERRIDES = {"http.long-ids": "true"}

LONGS = [9223372036854775807, 9007199254740993, 1234567890123456789]


def test_a_java_long_user_buys_and_every_read_names_them_exactly(api, ctl, mysql, redis, conf, gateway,
                                                                  consumer):
    sale = ctl.create_sale(len(LONGS) + 1)
    orders = {}
    for user in LONGS:
        r = api.post(f"/seckill/execute?userId={user}&activityId={sale.activity_id}")
        assert r.code == 200 and r["userId"] == user, repr(r)
        orders[user] = r["orderNo"]
    # A form body, as a browser's form sends it.
    form_user = 9000000000000000001
    r = api.post("/seckill/execute", data={"userId": str(form_user), "activityId": str(sale.activity_id)})
    assert r.code == 200, repr(r)
    orders[form_user] = r["orderNo"]

    wait_for_consumer(mysql, redis, conf, sale.activity_id, expected_rows=len(orders), consumer=consumer)
    rows = mysql.rows(f"SELECT user_id, order_no FROM seckill_order WHERE activity_id = {sale.activity_id}")
    assert {int(u): o for u, o in rows} == orders, rows
    for user, order_no in orders.items():
        res = api.get("/seckill/result", params={"userId": user, "activityId": sale.activity_id})
        assert res.code == 200 and res["orderNo"] == order_no and res["userId"] == user, repr(res)
        # The same user again: one order per user, also for ids a double cannot tell apart
        # (2^53 + 1 reads as 2^53 in a double).
        again = api.post(f"/seckill/execute?userId={user}&activityId={sale.activity_id}")
        assert again.code == 409 and again["status"] == "DUPLICATE", repr(again)
    # 2^53, the double 2^53 + 1 rounds to, is another user: sold out, not a duplicate.
    twin = 9007199254740992
    r = api.post(f"/seckill/execute?userId={twin}&activityId={sale.activity_id}")
    assert r.code == 409 and r["status"] == "OUT_OF_STOCK", repr(r)

    user = LONGS[0]
    # The ids are fixed, so an earlier run's coupons may be listed too.
    won = poll_until(lambda: [c for c in api.get("/coupons", params={"userId": user})["coupons"]
                              if c["couponId"] == sale.coupon_id], 20, "the won coupon in Redis")
    assert len(won) == 1 and won[0]["status"] == "UNUSED", won
    uc = won[0]["userCouponId"]
    used = api.post(f"/coupons/{uc}/use",
                    data={"userId": str(user), "orderAmount": "100.00", "orderRef": "L-1"})
    assert used.code == 200 and used["discount"] == "5.00", repr(used)
    poll_until(lambda: mysql.rows(f"SELECT status, user_id FROM user_coupon WHERE id = {uc}") ==
               [["USED", str(user)]], 20, "the redemption in MySQL")


def test_beyond_java_long_is_refused(api, gateway):
    r = api.post("/seckill/execute?userId=9223372036854775808&activityId=1")
    assert r.code == 400 and r["message"] == "userId must be a positive integer below 2^63", repr(r)
    r = api.get("/seckill/stock/9223372036854775808")
    assert r.code == 400, repr(r)
