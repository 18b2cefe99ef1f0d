"""What a client finds: GET /seckill/activities lists the sales it can count down to or buy
in, with their coupon's terms and the server's clock; GET /coupons names each coupon; a
paused sale says so; and GET /seckill/result of a user whose order failed answers FAILED
with the reason, not 404."""

import json
import time
from datetime import datetime

from longpoll import release, stuck_order
from sales import won_coupon
from stack import poll_until

NAME = 'Double "11" \\ 满100减20'


def listed(api):
    r = api.get("/seckill/activities")
    assert r.code == 200, repr(r)
    assert r["success"] is True and r["truncated"] is False, repr(r)
    return r


def sale_in(listing, activity_id):
    found = [s for s in listing["activities"] if s["activityId"] == activity_id]
    assert len(found) <= 1, listing
    return found[0] if found else None


def coupon_named(ctl, name, total=10):
    return ctl.create_id("coupon", "create", "--name", name, "--type", "DISCOUNT", "--rate", "0.85",
                         "--max-discount", "30.00", "--min-order", "100.00", "--total", total,
                         "--start", "-1m", "--end", "+2d")


def test_current_and_upcoming_sales_with_their_coupon_and_the_server_clock(api, ctl, gateway):
    coupon = coupon_named(ctl, NAME)
    later = ctl.create_id("activity", "create", "--coupon", coupon, "--stock", 4, "--start", "+2h",
                          "--end", "+3h", "--name", "later")
    now = ctl.create_id("activity", "create", "--coupon", coupon, "--stock", 3, "--start", "now",
                        "--end", "+1h", "--name", "now")
    gone = ctl.create_id("activity", "create", "--coupon", coupon, "--stock", 2, "--start", "now",
                         "--end", "+1h", "--name", "cancelled")
    ctl.run_ok("activity", "cancel", gone)

    def both():
        listing = listed(api)
        return listing if sale_in(listing, now) and sale_in(listing, later) else None
    listing = poll_until(both, 20, "both sales in the listing")
    before = time.time() * 1000
    assert abs(listing["serverTimeMs"] - before) < 10_000, listing
    assert listing["serverTime"].endswith("Z") or "+" in listing["serverTime"], listing

    current, upcoming = sale_in(listing, now), sale_in(listing, later)
    assert current["status"] == "ACTIVE" and upcoming["status"] == "PENDING", listing
    assert current["name"] == "now" and current["couponId"] == coupon, current
    assert current["stock"] == 3 and current["stockLeft"] == 3, current
    assert upcoming["stock"] == 4 and upcoming["stockLeft"] == 4, upcoming
    terms = current["coupon"]
    assert terms == upcoming["coupon"], listing
    assert terms["name"] == NAME and terms["type"] == "DISCOUNT", terms
    assert terms["rate"] == "0.8500" and terms["maxDiscount"] == "30.00", terms
    assert terms["minOrder"] == "100.00" and "amount" not in terms, terms
    assert terms["validFrom"] and terms["validUntil"], terms
    # Over sales are left out; the rest come earliest start first.
    assert sale_in(listing, gone) is None, listing
    # By instant, not by text: a start on a whole second is written without ".000", and
    # "16Z" sorts after "16.027Z" as text.
    starts = [(datetime.fromisoformat(s["startTime"].replace("Z", "+00:00")), s["activityId"])
              for s in listing["activities"]]
    assert starts == sorted(starts), starts
    # The sale's own page says the same.
    one = api.get(f"/seckill/activities/{now}")
    assert one.code == 200 and one["coupon"] == terms and one["status"] == "ACTIVE", repr(one)


def test_stock_left_follows_the_sale(api, ctl, gateway, ids):
    sale = ctl.create_sale(3)
    poll_until(lambda: sale_in(listed(api), sale.activity_id), 20, "the sale in the listing")
    r = api.execute(ids(), sale.activity_id)
    assert r.code == 200, repr(r)
    poll_until(lambda: sale_in(listed(api), sale.activity_id)["stockLeft"] == 2, 20,
               "the listing to show one unit sold")


def test_a_paused_sale_says_so_until_its_coupon_is_active_again(api, ctl, gateway):
    sale = ctl.create_sale(2)
    poll_until(lambda: sale_in(listed(api), sale.activity_id), 20, "the sale in the listing")
    ctl.run_ok("coupon", "deactivate", sale.coupon_id)
    poll_until(lambda: sale_in(listed(api), sale.activity_id)["status"] == "PAUSED", 20,
               "the listing to say PAUSED")
    one = api.get(f"/seckill/activities/{sale.activity_id}")
    assert one.code == 200 and one["status"] == "PAUSED", repr(one)
    ctl.run_ok("coupon", "activate", sale.coupon_id)
    poll_until(lambda: sale_in(listed(api), sale.activity_id)["status"] == "ACTIVE", 20,
               "the listing to say ACTIVE again")


def test_user_coupons_carry_the_coupons_name(api, ctl, mysql, redis, ids, consumer):
    user, uc_id, key = won_coupon(ctl, api, mysql, redis, ids)
    coupons = api.get("/coupons", params={"userId": user})
    assert coupons.code == 200, repr(coupons)
    won = [c for c in coupons["coupons"] if c["userCouponId"] == uc_id]
    assert won and won[0]["name"] == "t", repr(coupons)  # sales.Ctl.create_sale's coupon

    coupon = coupon_named(ctl, NAME)
    granted_to = ids()
    ctl.run_ok("coupon", "grant", "--coupon", coupon, "--user", granted_to, "--ref", f"grant-{granted_to}")
    coupons = poll_until(lambda: api.get("/coupons", params={"userId": granted_to})["coupons"], 20,
                         "the granted coupon listed")
    assert [c["name"] for c in coupons] == [NAME], coupons


def test_a_record_written_before_names_were_kept_reads_with_no_name(api, redis, ids):
    user = ids()
    record = {"id": 900000000 + user % 1000000, "userId": user, "couponId": 1, "type": "CASH", "amount": 500,
              "rate": 10000, "minOrder": 0, "maxDiscount": 0, "start": 1, "end": 4102444800000}
    redis("HSET", f"seckill:ucoupon:{{u{user}}}", str(record["id"]), json.dumps(record))
    coupons = api.get("/coupons", params={"userId": user})
    assert coupons.code == 200, repr(coupons)
    assert [(c["userCouponId"], c["name"], c["amount"]) for c in coupons["coupons"]] == \
        [(record["id"], None, "5.00")], repr(coupons)


def test_only_get_is_served(api):
    r = api.request("POST", "/seckill/activities")
    assert r.code == 405, repr(r)


def test_the_result_of_a_failed_order_is_failed_with_its_reason(api, ctl, redis, conf, gateway, ids):
    sale = ctl.create_sale(3)
    user = ids()
    order_no = stuck_order(redis, conf, sale.activity_id, user)
    res = api.get("/seckill/result", params={"userId": user, "activityId": sale.activity_id})
    assert res.code == 200 and res["status"] == "PROCESSING" and "reason" not in res.json, repr(res)

    release(redis, conf, sale.activity_id, order_no)
    res = api.get("/seckill/result", params={"userId": user, "activityId": sale.activity_id})
    assert res.code == 200, repr(res)
    assert (res["orderNo"], res["status"], res["reason"]) == (order_no, "FAILED", "ROLLED_BACK"), repr(res)
    # The order itself says FAILED too; a held request is answered at once.
    assert api.order_status(order_no) == "FAILED"
    held = api.get("/seckill/result", params={"userId": user, "activityId": sale.activity_id, "wait": 5})
    assert held.code == 200 and held["status"] == "FAILED", repr(held)

    # Free again, the user buys: their new order is the answer from then on.
    again = api.execute(user, sale.activity_id)
    assert again.code == 200, repr(again)
    res = api.get("/seckill/result", params={"userId": user, "activityId": sale.activity_id})
    assert res["orderNo"] == again["orderNo"] and res["status"] != "FAILED", repr(res)

    # A user who never ordered is still 404.
    none = api.get("/seckill/result", params={"userId": ids(), "activityId": sale.activity_id})
    assert none.code == 404, repr(none)
