"""The coupon a user won: listed by GET /coupons, redeemed once by
POST /coupons/{userCouponId}/use (the same orderRef gets the same answer, another one 409),
and the redemption recorded in MySQL."""

import time

import pytest

from stack import poll_until

STOCK = 5


def listed(api, user):
    r = api.get("/coupons", params={"userId": user})
    assert r.code == 200, repr(r)
    return r["coupons"]


@pytest.fixture(scope="module")
def winners(ctl, api, gateway, consumer, mysql):
    """Two users who each won the sale's coupon: {user: (orderNo, userCouponId)}."""
    sale = ctl.create_sale(STOCK)
    base = int(time.time() * 1000) % 10**12 * 1000
    out = {}
    for user in (base + 1, base + 2):
        r = api.execute(user, sale.activity_id)
        assert r.code == 200, repr(r)
        order_no = r["orderNo"]
        poll_until(lambda: api.order_status(order_no) == "SUCCESS", 20, f"order {order_no} to be SUCCESS")
        uc = mysql.rows(f"SELECT id FROM user_coupon WHERE source_ref = '{order_no}'")
        assert len(uc) == 1, uc
        out[user] = (order_no, int(uc[0][0]))
    return sale, out


def test_won_coupon_is_listed(api, winners):
    sale, users = winners
    for user, (order_no, uc_id) in users.items():
        coupons = poll_until(lambda: listed(api, user), 20, f"user {user}'s coupon to be listed")
        assert len(coupons) == 1, coupons
        c = coupons[0]
        assert c["userCouponId"] == uc_id, c
        assert c["couponId"] == sale.coupon_id, c
        assert c["type"] == "CASH" and c["status"] == "UNUSED", c


def test_use_once(api, winners, mysql):
    sale, users = winners
    user = min(users)
    uc_id = users[user][1]
    poll_until(lambda: listed(api, user), 20, f"user {user}'s coupon to be listed")
    ref = f"checkout-{user}"
    body = {"userId": user, "orderAmount": "100.00", "orderRef": ref}
    r = api.post(f"/coupons/{uc_id}/use", json=body)
    assert r.code == 200, repr(r)
    assert r["success"] is True
    assert (r["discount"], r["payable"], r["orderRef"]) == ("5.00", "95.00", ref), repr(r)

    again = api.post(f"/coupons/{uc_id}/use", data=body)
    assert again.code == 200, repr(again)
    assert (again["discount"], again["payable"], again["orderRef"]) == ("5.00", "95.00", ref)

    other = api.post(f"/coupons/{uc_id}/use", json=dict(body, orderRef=ref + "-b"))
    assert other.code == 409 and other.status == "USED", repr(other)
    assert other["success"] is False

    c = listed(api, user)[0]
    assert c["status"] == "USED" and c["orderRef"] == ref, c

    # The redemption reaches MySQL.
    sql = f"SELECT status, order_ref, discount FROM user_coupon WHERE id = {uc_id}"
    poll_until(lambda: mysql.rows(sql)[0][0] == "USED", 20, f"user coupon {uc_id} to be USED in MySQL")
    assert mysql.rows(sql) == [["USED", ref, "5.00"]]


def test_refusals_leave_the_coupon_unused(api, winners):
    sale, users = winners
    user = max(users)
    uc_id = users[user][1]
    poll_until(lambda: listed(api, user), 20, f"user {user}'s coupon to be listed")
    ok = {"userId": user, "orderAmount": "100.00", "orderRef": f"r-{user}"}

    below = api.post(f"/coupons/{uc_id}/use", json=dict(ok, orderAmount="9.99"))
    assert below.code == 409 and below.status == "BELOW_MIN_ORDER", repr(below)
    assert below["success"] is False and below["minOrder"] == "10.00", repr(below)
    stranger = api.post(f"/coupons/{uc_id}/use", json=dict(ok, userId=user + 1000))
    assert stranger.code == 404 and stranger.status == "NOT_FOUND", repr(stranger)
    unknown = api.post("/coupons/9007199254740000/use", json=ok)
    assert unknown.code == 404 and unknown.status == "NOT_FOUND", repr(unknown)

    for bad in (dict(ok, orderAmount="abc"), dict(ok, orderAmount="1.234"),
                dict(ok, orderAmount="-5.00"), dict(ok, userId="0"), dict(ok, orderRef="a b"),
                dict(ok, orderRef="x" * 65), {k: v for k, v in ok.items() if k != "orderRef"},
                {k: v for k, v in ok.items() if k != "orderAmount"}):
        r = api.post(f"/coupons/{uc_id}/use", json=bad)
        assert r.code == 400 and r.status == "INVALID", f"{bad}: {r!r}"
    r = api.post("/coupons/abc/use", json=ok)
    assert r.code == 400 and r.status == "INVALID", repr(r)
    r = api.get(f"/coupons/{uc_id}/use")
    assert r.code == 405 and r.status == "METHOD_NOT_ALLOWED", repr(r)
    r = api.get("/coupons")
    assert r.code == 400 and r.status == "INVALID", repr(r)

    assert listed(api, user)[0]["status"] == "UNUSED"
    # At the minimum order amount the cash coupon applies in full.
    r = api.post(f"/coupons/{uc_id}/use", json=dict(ok, orderAmount="10.00"))
    assert r.code == 200, repr(r)
    assert (r["discount"], r["payable"]) == ("5.00", "5.00"), repr(r)
