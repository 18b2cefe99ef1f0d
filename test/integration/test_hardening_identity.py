"""Hardening (issue 11) of who is asking and what they send, against the real gateway:
JWTs without exp and with the wrong issuer or audience (item 8), X-Forwarded-For given on
several header lines (item 6), a raw NUL in a JSON string and percent-encoded parameter
names (item 9), and redemption amounts that DECIMAL(15,2) cannot hold (item 3).

Each test failed on the code before its fix."""

import time

from sales import won_coupon

from stack import poll_until
from gatewayhttp import http_bytes, jwt_sign, raw_http

JWT_SECRET = "integration-jwt-secret-0123456789-abcdefghij"
ISSUER = "https://login.example.test"
AUDIENCE = "seckill"
PROXY = "10.9.8.7"


def send(gw, data, source=None):
    return raw_http(gw.conf.http_port, data, source=source).reply(data[:80].decode("latin-1"))


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def rl_ip(activity, ip):
    return f"seckill:rl:ip:{{{activity}}}:{ip}"


def execute_req(user, activity, headers=None):
    target = f"/seckill/execute?activityId={activity}"
    if user is not None:
        target += f"&userId={user}"
    return http_bytes("POST", target, headers=headers)


# ---- item 8: JWT exp, iss and aud --------------------------------------------------------


def test_jwt_without_exp_is_refused(gateway_with, ctl, redis, conf, ids):
    gw = gateway_with({"auth.mode": "jwt", "auth.jwt-secret": JWT_SECRET})
    a = ctl.create_sale(5).activity_id
    user = ids()
    forever = jwt_sign({"sub": str(user)}, JWT_SECRET)
    r = send(gw, execute_req(None, a, bearer(forever)))
    assert r.code == 401 and r.status == "UNAUTHORIZED", repr(r)
    assert "exp" in r["message"], repr(r)
    assert redis("HLEN", conf.key("users", a)) == 0, "a token without exp reserved stock"
    r = send(gw, http_bytes("GET", "/coupons", bearer(forever)))
    assert r.code == 401 and r.status == "UNAUTHORIZED", repr(r)
    # The same user with an exp is served.
    r = send(gw, execute_req(None, a, bearer(jwt_sign({"sub": str(user), "exp": int(time.time()) + 600},
                                                       JWT_SECRET))))
    assert r.code == 200 and r["status"] == "PROCESSING", repr(r)


def test_jwt_without_exp_allowed_when_not_required(gateway_with):
    gw = gateway_with({"auth.mode": "jwt", "auth.jwt-secret": JWT_SECRET, "auth.require-exp": "false"})
    r = send(gw, http_bytes("GET", "/coupons", bearer(jwt_sign({"sub": "4242"}, JWT_SECRET))))
    assert r.code == 200 and r["coupons"] == [], repr(r)
    # An exp that is given still counts.
    expired = jwt_sign({"sub": "4242", "exp": int(time.time()) - 600}, JWT_SECRET)
    r = send(gw, http_bytes("GET", "/coupons", bearer(expired)))
    assert r.code == 401 and r.status == "UNAUTHORIZED", repr(r)


def test_jwt_issuer_and_audience(gateway_with):
    exp = int(time.time()) + 600
    base = {"sub": "4343", "exp": exp}

    def status(gw, claims):
        r = send(gw, http_bytes("GET", "/coupons", bearer(jwt_sign(claims, JWT_SECRET))))
        assert r.code in (200, 401), repr(r)
        return r.code

    # Not configured: neither is looked at.
    plain = gateway_with({"auth.mode": "jwt", "auth.jwt-secret": JWT_SECRET})
    assert status(plain, dict(base, iss="anyone", aud="anything")) == 200

    gw = gateway_with({"auth.mode": "jwt", "auth.jwt-secret": JWT_SECRET,
                       "auth.jwt-issuer": ISSUER, "auth.jwt-audience": AUDIENCE})
    good = dict(base, iss=ISSUER, aud=AUDIENCE)
    assert status(gw, good) == 200
    assert status(gw, dict(good, aud=["other", AUDIENCE])) == 200
    refused = {
        "no iss": {k: v for k, v in good.items() if k != "iss"},
        "other iss": dict(good, iss="https://evil.example.test"),
        "iss prefix": dict(good, iss=ISSUER + "/x"),
        "iss not a string": dict(good, iss=1),
        "iss in an array": dict(good, iss=[ISSUER]),
        "no aud": {k: v for k, v in good.items() if k != "aud"},
        "other aud": dict(good, aud="seckill-admin"),
        "aud array without ours": dict(good, aud=["other", "seckill2"]),
        "aud empty array": dict(good, aud=[]),
        "aud not a string": dict(good, aud=7),
        "aud array of non-strings": dict(good, aud=[7, None]),
    }
    for what, claims in refused.items():
        assert status(gw, claims) == 401, what

    # Only the audience configured: any issuer.
    aud_only = gateway_with({"auth.mode": "jwt", "auth.jwt-secret": JWT_SECRET, "auth.jwt-audience": AUDIENCE})
    assert status(aud_only, dict(base, aud=AUDIENCE)) == 200
    assert status(aud_only, dict(base, iss="whoever", aud=[AUDIENCE])) == 200
    assert status(aud_only, base) == 401


# ---- item 6: X-Forwarded-For on several lines --------------------------------------------


def xff_request(user, activity, lines):
    """An execute request with one X-Forwarded-For header line per entry of `lines`."""
    head = [f"POST /seckill/execute?activityId={activity}&userId={user} HTTP/1.1", "Host: 127.0.0.1",
            "Content-Length: 0"]
    head += [f"X-Forwarded-For: {line}" for line in lines]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")


def test_forwarded_for_last_hop_of_all_lines(gateway_with, ctl, redis, ids):
    gw = gateway_with({"http.trust-forwarded-for": "true", "seckill.max-requests-per-ip": 3})
    a = ctl.create_sale(20).activity_id
    # The client forges a new first line every time; the proxy adds its own line last.
    replies = [send(gw, xff_request(ids(), a, [f"198.51.100.{i + 1}", PROXY])) for i in range(4)]
    assert [r.code for r in replies] == [200, 200, 200, 429], replies
    assert replies[3].status == "RATE_LIMITED", replies
    assert redis("GET", rl_ip(a, PROXY)) == "4"
    for i in range(4):
        assert redis("EXISTS", rl_ip(a, f"198.51.100.{i + 1}")) == 0

    # As if joined with ",": the last hop of the last line, whatever the lines before say.
    b = ctl.create_sale(20).activity_id
    cases = [
        (["1.1.1.1", "2.2.2.2, 203.0.113.5", "203.0.113.9"], "203.0.113.9"),
        (["1.1.1.1, 2.2.2.2", "  2001:db8::7 "], "2001:db8::7"),
        (["203.0.113.9", "garbage"], "127.0.0.1"),        # a bad last hop: the peer, not line 1
        (["203.0.113.9", ""], "127.0.0.1"),               # an empty last line is an empty hop
        (["203.0.113.9", "1.2.3.4, "], "127.0.0.1"),
    ]
    for lines, _ in cases:
        r = send(gw, xff_request(ids(), b, lines))
        assert r.code == 200, f"{lines}: {r!r}"
    assert redis("GET", rl_ip(b, "203.0.113.9")) == "1"
    assert redis("GET", rl_ip(b, "2001:db8::7")) == "1"
    assert redis("GET", rl_ip(b, "127.0.0.1")) == "3"
    for ip in ("1.1.1.1", "2.2.2.2", "203.0.113.5", "1.2.3.4"):
        assert redis("EXISTS", rl_ip(b, ip)) == 0, ip


# ---- item 9: parsing gaps ----------------------------------------------------------------


def test_nul_in_json_and_encoded_names_refused(gateway, ctl, redis, conf, ids):
    a = ctl.create_sale(5).activity_id
    user = ids()
    json_type = {"Content-Type": "application/json"}
    bodies = [
        b'{"activityId":%d,"userId":"%d\x00junk"}' % (a, user),     # a raw NUL byte
        b'{"activityId":%d,"userId":"%d\\u0000junk"}' % (a, user),  # the escaped form
        b'{"activityId":%d,"userId":"%d"}\x00' % (a, user),         # after the object
    ]
    for body in bodies:
        r = send(gateway, http_bytes("POST", "/seckill/execute", json_type, body))
        assert r.code == 400 and r.status == "INVALID", f"{body!r}: {r!r}"
    # A parameter name spelled with %XX is the name it spells: here a conflicting repeat.
    for target in (f"/seckill/execute?activityId={a}&user%49d={user + 1}&userId={user}",
                   f"/seckill/execute?activityId={a}&userId={user}&%75%73%65%72%49%64={user + 1}",
                   f"/seckill/execute?activity%49d={a + 1}&activityId={a}&userId={user}"):
        r = send(gateway, http_bytes("POST", target))
        assert r.code == 400 and r.status == "INVALID", f"{target}: {r!r}"
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    r = send(gateway, http_bytes("POST", f"/seckill/execute?activityId={a}", form,
                                 f"user%49d={user + 1}&userId={user}"))
    assert r.code == 400 and r.status == "INVALID", repr(r)
    assert redis("HLEN", conf.key("users", a)) == 0
    # Spelled alone, it is the parameter it spells.
    r = send(gateway, http_bytes("POST", f"/seckill/execute?activityId={a}&user%49d={user}"))
    assert r.code == 200, repr(r)
    assert redis("HGET", conf.key("users", a), str(user)) == r["orderNo"]


# ---- item 3: amounts that MySQL cannot hold ----------------------------------------------


def test_use_amount_beyond_decimal_15_2(api, gateway, consumer, ctl, redis, mysql, ids):
    user, uc_id, key = won_coupon(ctl, api, mysql, redis, ids)
    before = redis("HGETALL", key)

    ok = {"userId": user, "orderRef": f"big-{user}"}
    for amount in ("10000000000000.00", "10000000000000", "9999999999999.999", "92233720368547758.07",
                   10000000000000, 1e15):
        r = api.post(f"/coupons/{uc_id}/use", json=dict(ok, orderAmount=amount))
        assert r.code == 400 and r.status == "INVALID", f"{amount!r}: {r!r}"
    assert redis("HGETALL", key) == before, "a refused amount changed the coupon record"
    assert redis("HEXISTS", key, f"{uc_id}:used") == 0

    # The largest amount DECIMAL(15,2) holds is accepted and reaches MySQL as given.
    r = api.post(f"/coupons/{uc_id}/use", json=dict(ok, orderAmount="9999999999999.99"))
    assert r.code == 200, repr(r)
    assert (r["discount"], r["payable"]) == ("5.00", "9999999999994.99"), repr(r)
    row = poll_until(lambda: mysql.rows(f"SELECT status, payable FROM user_coupon WHERE id = {uc_id} "
                                        "AND status = 'USED'"), 30, "the redemption in MySQL")
    assert row[0][1] == "9999999999994.99", row
