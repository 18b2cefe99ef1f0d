"""Refunds and revocations (issue 27 item 2 a, b; docs/coupons.md#refunds-and-revocations).

POST /coupons/{id}/refund gives a redeemed coupon back when the checkout that used it is
refunded: only that orderRef may, the same refund again gets the same 200, and it travels
like a redemption (Redis first, coupon.refunded through Kafka, the consumer's
transaction). `seckillctl coupon revoke` (and POST /admin/user-coupons/{id}/revoke) takes
an unused coupon back from its holder: REVOKED in Redis and MySQL, its unit back to the
coupon. Every test ends with the counters in MySQL equal to the user_coupon rows and Redis
agreeing with MySQL."""

import json

import pytest

from adminhttp import Admin
from luabody import lua_body
from gatewayhttp import Api
from stack import DeafKafkaGateway, free_port, poll_until, write_conf

TOTAL = 40
TOKEN = "refunds-admin-token-of-at-least-32-chars"
CONF_OVERRIDES = {"admin.port": free_port(), "admin.token": TOKEN}


@pytest.fixture(scope="module")
def coupon(ctl):
    return ctl.create_id("coupon", "create", "--name", "refunds", "--type", "CASH", "--amount", "5.00",
                         "--min-order", "10.00", "--total", TOTAL, "--start", "-1m", "--end", "+1d")


@pytest.fixture
def granted(ctl, coupon, redis, ids):
    """A user and a coupon granted to them, in Redis: (user, userCouponId, key)."""
    def grant():
        user = ids()
        uc_id = ctl.create_id("coupon", "grant", "--coupon", coupon, "--user", user)
        key = f"seckill:ucoupon:{{u{user}}}"
        poll_until(lambda: redis("HEXISTS", key, str(uc_id)) == 1, 20, "the coupon record in Redis")
        return user, uc_id, key
    return grant


def use(api, uc_id, user, ref, amount="100.00"):
    return api.post(f"/coupons/{uc_id}/use", json={"userId": user, "orderAmount": amount, "orderRef": ref})


def refund(api, uc_id, user, ref):
    return api.post(f"/coupons/{uc_id}/refund", json={"userId": user, "orderRef": ref})


def row(mysql, uc_id):
    return mysql.rows(f"SELECT status, order_ref, discount, payable, used_at, refunded_ref, event_seq "
                      f"FROM user_coupon WHERE id = {uc_id}")[0]


def mysql_status(mysql, uc_id, status, ref=None):
    """Waits until the consumer has brought the row to `status` (used by `ref`)."""
    poll_until(lambda: row(mysql, uc_id)[:2] == [status, ref or "NULL"], 30,
               f"user coupon {uc_id} to be {status} {ref or ''} in MySQL")


def listed(api, user, uc_id):
    r = api.get("/coupons", params={"userId": user})
    assert r.code == 200, repr(r)
    return next(c for c in r["coupons"] if c["userCouponId"] == uc_id)


def counters_match_rows(mysql, coupon):
    """issued_count and used_count say what the user_coupon rows say."""
    issued, used = (int(v) for v in
                    mysql.rows(f"SELECT issued_count, used_count FROM coupon WHERE id = {coupon}")[0])
    rows = dict((s, int(n)) for s, n in mysql.rows(
        f"SELECT status, COUNT(*) FROM user_coupon WHERE coupon_id = {coupon} GROUP BY status"))
    assert used == rows.get("USED", 0), (used, rows)
    assert issued == sum(n for s, n in rows.items() if s != "REVOKED"), (issued, rows)


def test_refund_gives_the_coupon_back_once(api, gateway, consumer, mysql, redis, granted, coupon):
    user, uc_id, key = granted()
    ref = f"chk-{user}"
    used_before = int(mysql.scalar(f"SELECT used_count FROM coupon WHERE id = {coupon}"))
    assert use(api, uc_id, user, ref).code == 200
    mysql_status(mysql, uc_id, "USED", ref)
    poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:pending") == 0, 10, "the use's ack")

    r = refund(api, uc_id, user, ref)
    assert r.code == 200 and r["success"] is True, repr(r)
    assert r["userCouponId"] == uc_id and r["orderRef"] == ref and r["refundedAt"], repr(r)
    assert listed(api, user, uc_id)["status"] == "UNUSED"

    mysql_status(mysql, uc_id, "UNUSED")
    status, order_ref, discount, payable, used_at, refunded_ref, seq = row(mysql, uc_id)
    assert (order_ref, discount, payable, used_at, refunded_ref) == ("NULL",) * 4 + (ref,)
    assert int(seq) > 0
    assert int(mysql.scalar(f"SELECT used_count FROM coupon WHERE id = {coupon}")) == used_before

    # The same refund again, before and after the consumer ran: the same answer.
    poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:pending") == 0, 10, "the refund's ack")
    again = refund(api, uc_id, user, ref)
    assert again.code == 200 and again.json == r.json, (r, again)
    counters_match_rows(mysql, coupon)


def test_refund_refusals(api, gateway, consumer, mysql, redis, granted, coupon, ids):
    user, uc_id, key = granted()
    unused = refund(api, uc_id, user, f"chk-{user}")
    assert unused.code == 409 and unused.status == "NOT_USED", repr(unused)
    assert use(api, uc_id, user, f"chk-{user}").code == 200
    poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:pending") == 0, 10, "the use's ack")

    other = refund(api, uc_id, user, f"other-{user}")
    assert other.code == 409 and other.status == "USED" and other["usedBy"] == f"chk-{user}", repr(other)
    stranger = refund(api, uc_id, ids(), f"chk-{user}")
    assert stranger.code == 404 and stranger.status == "NOT_FOUND", repr(stranger)
    unknown = refund(api, 9007199254740000, user, f"chk-{user}")
    assert unknown.code == 404, repr(unknown)
    bad = api.post(f"/coupons/{uc_id}/refund", json={"userId": user, "orderRef": "no spaces"})
    assert bad.code == 400 and bad.status == "INVALID", repr(bad)
    missing = api.post(f"/coupons/{uc_id}/refund", json={"userId": user})
    assert missing.code == 400, repr(missing)

    assert listed(api, user, uc_id)["status"] == "USED"
    mysql_status(mysql, uc_id, "USED", f"chk-{user}")
    counters_match_rows(mysql, coupon)


def test_refund_then_another_checkout_uses_it(api, gateway, consumer, mysql, redis, granted, coupon):
    user, uc_id, key = granted()
    a, b = f"a-{user}", f"b-{user}"
    assert use(api, uc_id, user, a).code == 200
    poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:pending") == 0, 10, "the use's ack")
    first = refund(api, uc_id, user, a)
    assert first.code == 200, repr(first)
    poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:pending") == 0, 10, "the refund's ack")

    second = use(api, uc_id, user, b)
    assert second.code == 200 and second["discount"] == "5.00", repr(second)
    mysql_status(mysql, uc_id, "USED", b)
    assert row(mysql, uc_id)[5] == a
    # A's refund repeated still answers as it did; B's coupon stays used by B.
    poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:pending") == 0, 10, "the use's ack")
    again = refund(api, uc_id, user, a)
    assert again.code == 200 and again.json == first.json, (first, again)
    c = listed(api, user, uc_id)
    assert c["status"] == "USED" and c["orderRef"] == b, c
    counters_match_rows(mysql, coupon)


def test_use_and_refund_in_one_batch_apply_in_order(api, gateway, consumer, mysql, redis, granted, coupon):
    """With the consumer stopped, use A, refund A and use B of one coupon wait in Kafka
    and arrive in one batch: they apply in that order."""
    user, uc_id, key = granted()
    used_before = int(mysql.scalar(f"SELECT used_count FROM coupon WHERE id = {coupon}"))
    consumer.stop()
    try:
        for call, ref in ((use, "a"), (refund, "a"), (use, "b"), (refund, "b"), (use, "c")):
            r = call(api, uc_id, user, f"{ref}-{user}")
            assert r.code == 200, repr(r)
            poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:pending") == 0, 10, "the ack")
    finally:
        consumer.start()
    mysql_status(mysql, uc_id, "USED", f"c-{user}")
    assert row(mysql, uc_id)[5] == f"b-{user}"
    assert int(mysql.scalar(f"SELECT used_count FROM coupon WHERE id = {coupon}")) == used_before + 1
    counters_match_rows(mysql, coupon)


def test_a_refund_kafka_never_held_is_undone(tmp_path, api, gateway, consumer, mysql, redis, granted, coupon):
    """Its delivery failed: 503, and the coupon is used again by its order in Redis, as
    MySQL has it; the refund retried later goes through."""
    user, uc_id, key = granted()
    ref = f"chk-{user}"
    assert use(api, uc_id, user, ref).code == 200
    mysql_status(mysql, uc_id, "USED", ref)
    poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:pending") == 0, 10, "the use's ack")
    deaf = DeafKafkaGateway(write_conf(tmp_path / "deaf.conf", {
        "kafka.brokers": f"127.0.0.1:{free_port()}", "kafka.producer.message.timeout.ms": "1000"}), tmp_path)
    deaf.start()
    try:
        r = refund(Api(deaf.base_url), uc_id, user, ref)
    finally:
        deaf.finish(timeout=30)
    assert r.code == 503 and r.status == "UNAVAILABLE", repr(r)
    poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:used") == 1, 10, "the refund undone in Redis")
    assert redis("HEXISTS", key, f"{uc_id}:refunded") == 0
    c = listed(api, user, uc_id)
    assert c["status"] == "USED" and c["orderRef"] == ref, c
    assert refund(api, uc_id, user, ref).code == 200
    mysql_status(mysql, uc_id, "UNUSED")
    counters_match_rows(mysql, coupon)


def test_a_refund_no_replica_acknowledged_is_undone(gateway_with, api, gateway, consumer, mysql, redis,
                                                     granted, coupon):
    user, uc_id, key = granted()
    ref = f"chk-{user}"
    assert use(api, uc_id, user, ref).code == 200
    poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:pending") == 0, 10, "the use's ack")
    waiting = gateway_with({"redis.wait-replicas": "1"})
    r = refund(Api(waiting.base_url), uc_id, user, ref)
    assert r.code == 503 and "replicated" in r["message"], repr(r)
    poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:used") == 1, 10, "the refund undone in Redis")
    assert refund(api, uc_id, user, ref).code == 200
    mysql_status(mysql, uc_id, "UNUSED")
    counters_match_rows(mysql, coupon)


def issued(mysql, coupon):
    return int(mysql.scalar(f"SELECT issued_count FROM coupon WHERE id = {coupon}"))


def test_revoke_takes_an_unused_coupon_back(ctl, api, gateway, consumer, mysql, redis, granted, coupon):
    user, uc_id, key = granted()
    before = issued(mysql, coupon)
    r = ctl("--json", "coupon", "revoke", uc_id, "--reason", "fraud review")
    assert r.rc == 0, repr(r)
    out = json.loads(r.stdout)
    assert out == {"id": uc_id, "couponId": coupon, "userId": user, "status": "REVOKED", "revoked": True}, out
    assert row(mysql, uc_id)[0] == "REVOKED"
    assert mysql.rows(f"SELECT revoke_reason FROM user_coupon WHERE id = {uc_id}") == [["fraud review"]]
    assert issued(mysql, coupon) == before - 1

    refused = use(api, uc_id, user, f"chk-{user}")
    assert refused.code == 409 and refused.status == "REVOKED", repr(refused)
    assert listed(api, user, uc_id)["status"] == "REVOKED"
    assert refund(api, uc_id, user, f"chk-{user}").status == "NOT_USED"

    again = ctl("--json", "coupon", "revoke", uc_id)
    assert again.rc == 0 and json.loads(again.stdout)["revoked"] is False, repr(again)
    assert issued(mysql, coupon) == before - 1
    audit = mysql.rows("SELECT args, exit_status FROM admin_audit WHERE command = 'coupon revoke' "
                       f"AND args LIKE '%\"{uc_id}\"%' ORDER BY id")
    assert [a[1] for a in audit] == ["0", "0"], audit
    counters_match_rows(mysql, coupon)


def test_revoke_refuses_a_used_coupon_until_it_is_refunded(ctl, api, gateway, consumer, mysql, redis,
                                                           granted, coupon):
    user, uc_id, key = granted()
    ref = f"chk-{user}"
    assert use(api, uc_id, user, ref).code == 200
    # Used in Redis, perhaps not yet in MySQL: refused either way, nothing changed.
    r = ctl("coupon", "revoke", uc_id)
    assert r.rc == 1 and "refund it first" in r.stderr, repr(r)
    mysql_status(mysql, uc_id, "USED", ref)
    r = ctl("coupon", "revoke", uc_id)
    assert r.rc == 1 and "refund it first" in r.stderr, repr(r)
    assert redis("HEXISTS", key, f"{uc_id}:revoked") == 0

    poll_until(lambda: redis("HEXISTS", key, f"{uc_id}:pending") == 0, 10, "the use's ack")
    assert refund(api, uc_id, user, ref).code == 200
    mysql_status(mysql, uc_id, "UNUSED")
    poll_until(lambda: ctl("coupon", "revoke", uc_id).rc == 0, 10, "the revocation once the refund is recorded")
    assert row(mysql, uc_id)[0] == "REVOKED"
    assert use(api, uc_id, user, f"again-{user}").status == "REVOKED"
    counters_match_rows(mysql, coupon)


def test_revoke_interrupted_after_redis_is_finished_by_running_it_again(ctl, api, gateway, consumer, mysql,
                                                                       redis, granted, coupon):
    """A run that died between Redis and MySQL: Redis refuses the coupon already, MySQL
    still counts it issued and UNUSED; the next run finishes it, once."""
    user, uc_id, key = granted()
    before = issued(mysql, coupon)
    assert redis("EVAL", lua_body("revoke"), 1, key, str(uc_id), "1") == ["OK"]
    assert use(api, uc_id, user, f"chk-{user}").status == "REVOKED"
    assert row(mysql, uc_id)[0] == "UNUSED" and issued(mysql, coupon) == before

    assert ctl("coupon", "revoke", uc_id).rc == 0
    assert ctl("coupon", "revoke", uc_id).rc == 0
    assert row(mysql, uc_id)[0] == "REVOKED" and issued(mysql, coupon) == before - 1
    counters_match_rows(mysql, coupon)


def test_revoked_unit_can_be_granted_again(ctl, mysql, coupon, granted):
    """issued_count went down: the coupon's total is what it can ever have out at once."""
    user, uc_id, key = granted()
    assert ctl("coupon", "revoke", uc_id).rc == 0
    other = ctl.create_id("coupon", "grant", "--coupon", coupon, "--user", user)
    assert other != uc_id
    counters_match_rows(mysql, coupon)


def test_revoke_through_the_admin_api(admin_server, api, gateway, consumer, mysql, granted, coupon, ids):
    admin = Admin(f"http://127.0.0.1:{admin_server.port}", TOKEN)
    user, uc_id, key = granted()
    r = admin.post(f"/admin/user-coupons/{uc_id}/revoke", {"reason": "chargeback"})
    assert r.code == 200 and r["success"] is True and r["revoked"] is True, repr(r)
    again = admin.post(f"/admin/user-coupons/{uc_id}/revoke", {})
    assert again.code == 200 and again["revoked"] is False, repr(again)
    assert use(api, uc_id, user, f"chk-{user}").status == "REVOKED"

    missing = admin.post("/admin/user-coupons/9007199254740000/revoke", {})
    assert missing.code == 404 and missing.status == "NOT_FOUND", repr(missing)
    user2, used_id, key2 = granted()
    assert use(api, used_id, user2, f"chk-{user2}").code == 200
    refused = admin.post(f"/admin/user-coupons/{used_id}/revoke", {})
    assert refused.code == 409 and "refund it first" in refused["message"], repr(refused)
    bad = admin.post(f"/admin/user-coupons/{uc_id}/revoke", {"why": "x"})
    assert bad.code == 400, repr(bad)
    mysql_status(mysql, used_id, "USED", f"chk-{user2}")
    counters_match_rows(mysql, coupon)
