"""Protection (issue 4) against the real gateway: the global token bucket, the local per-IP
limit in front of it, the per-user and per-IP limits and the anti-brush ban at their
boundaries, the switches that turn them off, JWT authentication, one-time purchase
tokens, X-Forwarded-For trust, the cap on open connections and /metrics on its own port
(the table of malformed requests is test_malformed.py, slow clients test_slowloris.py).

Most tests start a gateway of their own with the settings they test (`gateway_with`); the
module's gateway (relaxed limits, auth.mode=none, X-Forwarded-For not trusted) shows that
X-Forwarded-For is ignored unless trusted."""

import http.client
import json
import socket
import subprocess
import threading
import time

import pytest

from sales import wait_for_consumer

from stack import BIN, Gateway, child_env, free_port, poll_until, write_conf
from gatewayhttp import b64url, gateway_metrics, http_bytes, jwt_sign, raw_http, read_raw_reply

JWT_SECRET = "integration-jwt-secret-0123456789-abcdefghij"
TOKEN_SECRET = "integration-purchase-token-secret-0123456789"


def execute_req(user, activity, headers=None, extra=""):
    target = f"/seckill/execute?activityId={activity}"
    if user is not None:
        target += f"&userId={user}"
    return http_bytes("POST", target + extra, headers=headers)


def send(gw, data, source=None):
    """One request on its own connection; the answer must be the API's JSON."""
    return raw_http(gw.conf.http_port, data, source=source).reply(data[:80].decode("latin-1"))


def burst(gw, requests):
    """Sends every request on its own, already open connection in one tight loop, then
    reads the answers: they all reach the gateway within a millisecond or so."""
    socks = [socket.create_connection(("127.0.0.1", gw.conf.http_port), timeout=30) for _ in requests]
    try:
        for s, data in zip(socks, requests):
            s.sendall(data)
        return [read_raw_reply(s, "POST").reply("burst") for s in socks]
    finally:
        for s in socks:
            s.close()


def retry_after(r):
    value = r.headers.get("Retry-After")
    assert value is not None and value.isdigit(), f"no numeric Retry-After: {r!r} {dict(r.headers)}"
    return int(value)


def rl_key(kind, activity, subject):
    return f"seckill:{kind}:{{{activity}}}:{subject}"


# ---- the global token bucket -------------------------------------------------------------


def test_global_token_bucket(gateway_with, ctl, ids):
    gw = gateway_with({"seckill.rate-limit.permits-per-second": 5,
                       "seckill.rate-limit.burst-capacity": 10})
    a = ctl.create_sale(30).activity_id
    replies = burst(gw, [execute_req(ids(), a) for _ in range(15)])
    limited = [r for r in replies if r.code == 429]
    served = [r for r in replies if r.code != 429]
    assert len(served) == 10 and len(limited) == 5, replies
    assert all(r.code == 200 for r in served), served
    for r in limited:
        assert r.status == "RATE_LIMITED" and r["success"] is False, repr(r)
        # Less than one token missing at 5 per second: back within a second.
        assert retry_after(r) == 1 and r["retryAfter"] == 1, repr(r)
    # Refused requests take no token: at 5 per second one is back within 200 ms.
    poll_until(lambda: send(gw, execute_req(ids(), a)).code == 200, 3, "the bucket to refill", interval=0.1)


# ---- the local per-IP limit in front of the global bucket --------------------------------

PER_IP = {"seckill.rate-limit.permits-per-second": 20, "seckill.rate-limit.burst-capacity": 20,
          "seckill.rate-limit.per-ip-local-permits-per-second": 5,
          "seckill.rate-limit.per-ip-local-burst": 5}
PHASE_SECONDS = 4
PACE = 0.25   # the paced client's interval: 4 a second, within its local share of 5


def flood(port, target, source, stop):
    """Execute requests as fast as one keep-alive connection from `source` takes them,
    until `stop`; the list of (code, status) answers."""
    answers = []
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        while not stop.is_set():
            c.request("POST", target())
            r = c.getresponse()
            body = json.loads(r.read() or b"{}")
            answers.append((r.status, body.get("status")))
    finally:
        c.close()
    return answers


def paced_against_flood(gw, activity, ids):
    """A client on 127.0.0.1 sending one request every PACE seconds while another on
    127.0.0.2 floods: the paced client's answers and the flooder's."""
    stop = threading.Event()
    flooded = []
    t = threading.Thread(target=lambda: flooded.extend(
        flood(gw.conf.http_port, lambda: f"/seckill/execute?userId={ids()}&activityId={activity}",
              "127.0.0.2", stop)))
    t.start()
    paced = []
    try:
        end = time.monotonic() + PHASE_SECONDS
        nxt = time.monotonic()
        while nxt < end:
            poll_until(lambda: time.monotonic() >= nxt, 2, "the next paced request", interval=0.01)
            paced.append(send(gw, execute_req(ids(), activity)))
            nxt += PACE
    finally:
        stop.set()
        t.join(15)
    return paced, flooded


def test_flooding_client_does_not_empty_the_global_bucket(gateway_with, ctl, ids):
    gw = gateway_with(PER_IP)
    pending = ctl.create_sale(50, start="+1h", end="+2h").activity_id
    active = ctl.create_sale(200).activity_id
    for activity, expected in ((pending, (409, "NOT_STARTED")), (active, (200, "PROCESSING"))):
        paced, flooded = paced_against_flood(gw, activity, ids)
        refused = [r for r in paced if (r.code, r.status) != expected]
        assert not refused, f"{len(refused)} of {len(paced)} paced requests refused: {refused[:3]}"
        # The flooder got its local share and 429 for the rest, far more than it was let in.
        let_in = [a for a in flooded if a != (429, "RATE_LIMITED")]
        assert len(flooded) > 10 * len(let_in), (len(flooded), len(let_in))
        assert all(a == expected for a in let_in), let_in[:5]
        assert len(let_in) <= 5 + 5 * (PHASE_SECONDS + 1), len(let_in)
    m = gateway_metrics(gw.conf.http_port)
    assert m["seckill_rate_limited_global_total"] == 0, m
    assert m["seckill_rate_limited_local_ip_total"] > 0, m


# ---- per-user and per-IP limits ----------------------------------------------------------


def test_per_user_and_per_ip_limits(gateway_with, ctl, redis, ids):
    gw = gateway_with({"seckill.max-requests-per-user": 3, "seckill.max-requests-per-ip": 5,
                       "seckill.anti-brush-threshold": 1000})
    # Per user: 3 attempts a minute (the first buys, the next two are duplicates).
    a = ctl.create_sale(20).activity_id
    user = ids()
    codes = [send(gw, execute_req(user, a)) for _ in range(3)]
    assert [(r.code, r.status) for r in codes] == [(200, "PROCESSING"), (409, "DUPLICATE"), (409, "DUPLICATE")], codes
    r = send(gw, execute_req(user, a))
    assert r.code == 429 and r.status == "RATE_LIMITED", repr(r)
    assert 1 <= retry_after(r) <= 60
    other = send(gw, execute_req(ids(), a))
    assert other.code == 200, repr(other)
    key = rl_key("rl:user", a, user)
    assert redis("GET", key) == "4"
    assert 1 <= redis("TTL", key) <= 60
    # The window passing (made to pass now) lets the user in again.
    redis("PEXPIRE", key, 1)
    poll_until(lambda: redis("EXISTS", key) == 0, 2, f"{key} to expire")
    r = send(gw, execute_req(user, a))
    assert r.code == 409 and r.status == "DUPLICATE", repr(r)

    # Per IP: 5 attempts a minute from 127.0.0.1, whoever sends them.
    b = ctl.create_sale(20).activity_id
    for _ in range(5):
        r = send(gw, execute_req(ids(), b))
        assert r.code == 200, repr(r)
    r = send(gw, execute_req(ids(), b))
    assert r.code == 429 and r.status == "RATE_LIMITED", repr(r)
    assert 1 <= retry_after(r) <= 60
    # Another address is counted on its own.
    r = send(gw, execute_req(ids(), b), source="127.0.0.2")
    assert r.code == 200, repr(r)
    key = rl_key("rl:ip", b, "127.0.0.1")
    assert redis("GET", key) == "6"
    assert 1 <= redis("TTL", key) <= 60
    assert redis("GET", rl_key("rl:ip", b, "127.0.0.2")) == "1"
    redis("PEXPIRE", key, 1)
    poll_until(lambda: redis("EXISTS", key) == 0, 2, f"{key} to expire")
    r = send(gw, execute_req(ids(), b))
    assert r.code == 200, repr(r)


# ---- anti-brush --------------------------------------------------------------------------


ANTI_BRUSH = {"seckill.anti-brush-threshold": 3, "seckill.anti-brush.ban-seconds": 2}


def brush_until_banned(gw, a, user):
    """Three attempts pass the anti-brush check, the fourth in 10 s is BLOCKED."""
    codes = [send(gw, execute_req(user, a)) for _ in range(3)]
    assert [r.code for r in codes] == [200, 409, 409], codes
    r = send(gw, execute_req(user, a))
    assert r.code == 429 and r.status == "BLOCKED", repr(r)
    assert retry_after(r) == 2
    return r


def test_anti_brush_bans(gateway_with, ctl, redis, ids):
    gw = gateway_with(ANTI_BRUSH)
    a = ctl.create_sale(20).activity_id
    user = ids()
    brush_until_banned(gw, a, user)
    # Still blocked during the ban, told how long is left; others are not.
    r = send(gw, execute_req(user, a))
    assert r.code == 429 and r.status == "BLOCKED" and 1 <= retry_after(r) <= 2, repr(r)
    assert 1 <= redis("TTL", rl_key("ban", a, user)) <= 2
    r = send(gw, execute_req(ids(), a))
    assert r.code == 200, repr(r)


def test_anti_brush_ban_lifts(gateway_with, ctl, redis, ids):
    gw = gateway_with(ANTI_BRUSH)
    a = ctl.create_sale(20).activity_id
    user = ids()
    brush_until_banned(gw, a, user)
    ban = rl_key("ban", a, user)
    poll_until(lambda: redis("EXISTS", ban) == 0, 4, f"the ban {ban} to lift", interval=0.1)
    # The ban restarts the 10-second attempt count (schema/lua/execute.lua): the first
    # attempt after a ban shorter than that window is not one more over the threshold.
    r = send(gw, execute_req(user, a))
    assert r.code == 409 and r.status == "DUPLICATE", repr(r)
    assert redis("EXISTS", ban) == 0, "the first attempt after the ban banned the user again"


# ---- switches ----------------------------------------------------------------------------


def test_limits_switched_off(gateway_with, ctl, redis, ids):
    gw = gateway_with({"seckill.enable-rate-limit": "false", "seckill.enable-anti-brush": "false",
                       "seckill.rate-limit.permits-per-second": 5,
                       "seckill.rate-limit.burst-capacity": 10,
                       "seckill.max-requests-per-user": 3, "seckill.max-requests-per-ip": 5,
                       "seckill.anti-brush-threshold": 3})
    a = ctl.create_sale(40).activity_id
    # The token-bucket burst: all 15 pass.
    replies = burst(gw, [execute_req(ids(), a) for _ in range(15)])
    assert [r.code for r in replies] == [200] * 15, replies
    # The per-user and anti-brush burst: one order, then duplicates, never 429.
    user = ids()
    codes = [send(gw, execute_req(user, a)).code for _ in range(10)]
    assert codes == [200] + [409] * 9, codes
    # Nothing counted in Redis.
    for key in (rl_key("rl:user", a, user), rl_key("rl:ip", a, "127.0.0.1"),
                rl_key("brush", a, user), rl_key("ban", a, user)):
        assert redis("EXISTS", key) == 0, key


# ---- JWT ---------------------------------------------------------------------------------


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def test_jwt(gateway_with, ctl, redis, mysql, conf, consumer, ids):
    gw = gateway_with({"auth.mode": "jwt", "auth.jwt-secret": JWT_SECRET, "auth.clock-skew-seconds": 30})
    sale = ctl.create_sale(20)
    a = sale.activity_id
    users_key = conf.key("users", a)
    now = int(time.time())

    def token(sub, **claims):
        return jwt_sign(dict({"sub": str(sub), "exp": now + 600}, **claims), JWT_SECRET)

    # A valid token: the order is the token's user's.
    user = ids()
    r = send(gw, execute_req(None, a, bearer(token(user))))
    assert r.code == 200 and r["status"] == "PROCESSING", repr(r)
    order_no = r["orderNo"]
    assert redis("HGET", users_key, str(user)) == order_no
    # A userId that agrees is fine (as a duplicate here).
    r = send(gw, execute_req(user, a, bearer(token(user))))
    assert r.code == 409 and r.status == "DUPLICATE" and r["orderNo"] == order_no, repr(r)

    sub = ids()
    bad = [
        ("forged signature", jwt_sign({"sub": str(sub), "exp": now + 600}, "another-secret-" + JWT_SECRET)),
        ("expired beyond the skew", token(sub, exp=now - 120)),
        ("not yet valid beyond the skew", token(sub, nbf=now + 120)),
        ("alg none", jwt_sign({"sub": str(sub), "exp": now + 600}, JWT_SECRET, alg="none")),
        ("alg none with a valid signature", b64url('{"alg":"none","typ":"JWT"}') + "." +
         token(sub).split(".", 1)[1]),
        ("alg HS512", jwt_sign({"sub": str(sub), "exp": now + 600}, JWT_SECRET, alg="HS512")),
        ("alg hs256 lower case", jwt_sign({"sub": str(sub), "exp": now + 600}, JWT_SECRET,
                                          header={"alg": "hs256", "typ": "JWT"})),
        ("no sub", jwt_sign({"exp": now + 600}, JWT_SECRET)),
        ("sub not a user id", token("alice")),
        ("exp not a number", jwt_sign({"sub": str(sub), "exp": "tomorrow"}, JWT_SECRET)),
        ("malformed: one part", "abc"),
        ("malformed: two parts", "abc.def"),
        ("malformed: four parts", token(sub) + ".x"),
        ("malformed: not base64", "!!!." + token(sub).split(".", 1)[1]),
        ("payload not JSON (signed)", jwt_sign("not json", JWT_SECRET)),
        ("payload a JSON array (signed)", jwt_sign("[1, 2]", JWT_SECRET)),
        ("empty token", ""),
    ]
    before = redis("HLEN", users_key)
    for what, tok in bad:
        r = send(gw, execute_req(None, a, bearer(tok)))
        assert r.code == 401 and r.status == "UNAUTHORIZED", f"{what}: {r!r}"
        assert r["success"] is False and r["message"], f"{what}: {r!r}"
    for what, headers in (("missing header", {}),
                          ("Basic scheme", {"Authorization": "Basic dXNlcjpwYXNz"}),
                          ("token without scheme", {"Authorization": token(sub)})):
        r = send(gw, execute_req(sub, a, headers))
        assert r.code == 401 and r.status == "UNAUTHORIZED", f"{what}: {r!r}"
    # A userId that disagrees with the token.
    r = send(gw, execute_req(sub + 1, a, bearer(token(sub))))
    assert r.code == 401 and r.status == "UNAUTHORIZED", repr(r)
    assert redis("HLEN", users_key) == before, "a refused token reserved stock"

    # Within the skew both ways: accepted.
    late = ids()
    r = send(gw, execute_req(None, a, bearer(token(late, exp=now - 10))))
    assert r.code == 200, repr(r)
    early = ids()
    r = send(gw, execute_req(None, a, bearer(token(early, nbf=now + 10))))
    assert r.code == 200, repr(r)

    # The read endpoints need the token too.
    result = f"/seckill/result?activityId={a}"
    r = send(gw, http_bytes("GET", result + f"&userId={user}"))
    assert r.code == 401 and r.status == "UNAUTHORIZED", repr(r)
    r = send(gw, http_bytes("GET", result + f"&userId={user}", bearer(token(user + 1))))
    assert r.code == 401 and r.status == "UNAUTHORIZED", repr(r)
    r = send(gw, http_bytes("GET", result, bearer(token(user))))
    assert r.code == 200 and r["orderNo"] == order_no, repr(r)
    r = send(gw, http_bytes("GET", f"/coupons?userId={user}"))
    assert r.code == 401 and r.status == "UNAUTHORIZED", repr(r)
    r = send(gw, http_bytes("GET", "/coupons", bearer(token(user, exp=now - 120))))
    assert r.code == 401 and r.status == "UNAUTHORIZED", repr(r)

    # The order reaches MySQL as the token's user's, and so does the coupon it won.
    wait_for_consumer(mysql, redis, conf, a, expected_rows=3, consumer=consumer)
    assert mysql.rows(f"SELECT user_id FROM seckill_order WHERE order_no = '{order_no}'") == [[str(user)]]
    coupons = poll_until(lambda: send(gw, http_bytes("GET", "/coupons", bearer(token(user))))["coupons"],
                         10, f"user {user}'s coupon to be listed")
    assert [c["couponId"] for c in coupons] == [sale.coupon_id], coupons
    uc = coupons[0]["userCouponId"]
    # Redeeming needs the owner's token.
    use = http_bytes("POST", f"/coupons/{uc}/use", {"Content-Type": "application/json"},
                     '{"orderAmount": "20.00", "orderRef": "jwt-1"}')
    r = send(gw, use)
    assert r.code == 401 and r.status == "UNAUTHORIZED", repr(r)
    r = send(gw, http_bytes("POST", f"/coupons/{uc}/use",
                            dict(bearer(token(late)), **{"Content-Type": "application/json"}),
                            '{"orderAmount": "20.00", "orderRef": "jwt-1"}'))
    assert r.code == 404 and r.status == "NOT_FOUND", repr(r)   # another user's coupon
    r = send(gw, http_bytes("POST", f"/coupons/{uc}/use",
                            dict(bearer(token(user)), **{"Content-Type": "application/json"}),
                            '{"orderAmount": "20.00", "orderRef": "jwt-1"}'))
    assert r.code == 200 and r["discount"] == "5.00", repr(r)


# ---- purchase tokens ---------------------------------------------------------------------


def get_token(gw, activity, user):
    return send(gw, http_bytes("GET", f"/seckill/token?activityId={activity}&userId={user}"))


def cached_token(gw, activity, user):
    """The gateway knows an activity from its cache, refreshed every activity-refresh-ms:
    a sale created a moment ago may be unknown (404) for that long."""
    return poll_until(lambda: (lambda r: r if r.code != 404 else None)(get_token(gw, activity, user)),
                      5, f"activity {activity} in the gateway's cache")


def test_purchase_token(gateway_with, ctl, redis, conf, ids):
    gw = gateway_with({"seckill.require-token": "true", "seckill.token-secret": TOKEN_SECRET,
                       "seckill.token-ttl-seconds": 60})
    user, other = ids(), ids()
    pending = ctl.create_sale(5, start="+1h", end="+2h").activity_id
    r = cached_token(gw, pending, user)
    assert r.code == 409 and r.status == "NOT_STARTED", repr(r)

    a = ctl.create_sale(10).activity_id
    b = ctl.create_sale(10).activity_id
    users_key = conf.key("users", a)
    # No token, an empty one, a made-up one.
    for extra in ("", "&token=", "&token=123.0123456789abcdef.AAAA"):
        r = send(gw, execute_req(user, a, extra=extra))
        assert r.code == 403 and r.status == "FORBIDDEN", f"{extra!r}: {r!r}"
    r = cached_token(gw, a, user)
    assert r.code == 200 and r["expiresIn"] == 60, repr(r)
    tok = r["token"]
    # Bound to its user and its activity.
    r = send(gw, execute_req(other, a, extra=f"&token={tok}"))
    assert r.code == 403 and r.status == "FORBIDDEN", repr(r)
    r = send(gw, execute_req(user, b, extra=f"&token={tok}"))
    assert r.code == 403 and r.status == "FORBIDDEN", repr(r)
    assert redis("HLEN", users_key) == 0
    r = send(gw, execute_req(user, a, extra=f"&token={tok}"))
    assert r.code == 200 and r["status"] == "PROCESSING", repr(r)
    # One time only (also in a JSON body).
    r = send(gw, execute_req(user, a, extra=f"&token={tok}"))
    assert r.code == 403 and r.status == "FORBIDDEN", repr(r)
    r = send(gw, http_bytes("POST", "/seckill/execute", {"Content-Type": "application/json"},
                            f'{{"userId": {user}, "activityId": {a}, "token": "{tok}"}}'))
    assert r.code == 403 and r.status == "FORBIDDEN", repr(r)
    assert redis("HLEN", users_key) == 1
    # A fresh token in a form body works for another user.
    tok2 = get_token(gw, a, other)["token"]
    r = send(gw, http_bytes("POST", "/seckill/execute",
                            {"Content-Type": "application/x-www-form-urlencoded"},
                            f"userId={other}&activityId={a}&token={tok2}"))
    assert r.code == 200, repr(r)


def test_purchase_token_expires(gateway_with, ctl, ids):
    gw = gateway_with({"seckill.require-token": "true", "seckill.token-secret": TOKEN_SECRET,
                       "seckill.token-ttl-seconds": 1})
    a = ctl.create_sale(5).activity_id
    user = ids()
    r = cached_token(gw, a, user)
    assert r.code == 200 and r["expiresIn"] == 1, repr(r)
    tok = r["token"]
    expires = int(tok.split(".")[0])
    assert expires - 2 <= time.time() <= expires, tok
    # Wait for the token's expiry (a deadline, not a guess).
    poll_until(lambda: time.time() >= expires + 0.05, 3, "the token to expire")
    r = send(gw, execute_req(user, a, extra=f"&token={tok}"))
    assert r.code == 403 and r.status == "FORBIDDEN", repr(r)


# ---- X-Forwarded-For ---------------------------------------------------------------------


def test_forwarded_for_ignored_unless_trusted(gateway, gateway_with, ctl, redis, ids):
    # The module's gateway does not trust the header: every request counts for the peer.
    a = ctl.create_sale(10).activity_id
    for xff in ("1.2.3.4", "1.2.3.4, 10.9.8.7", "garbage"):
        r = send(gateway, execute_req(ids(), a, {"X-Forwarded-For": xff}))
        assert r.code == 200, repr(r)
    assert redis("GET", rl_key("rl:ip", a, "127.0.0.1")) == "3"
    for ip in ("1.2.3.4", "10.9.8.7", "garbage"):
        assert redis("EXISTS", rl_key("rl:ip", a, ip)) == 0, ip

    trusting = gateway_with({"http.trust-forwarded-for": "true"})
    b = ctl.create_sale(10).activity_id
    for xff in ("1.2.3.4, 10.9.8.7", "  10.9.8.7", "1.2.3.4,2001:db8::1", "not-an-ip", "1.2.3.4, "):
        r = send(trusting, execute_req(ids(), b, {"X-Forwarded-For": xff}))
        assert r.code == 200, f"{xff!r}: {r!r}"
    r = send(trusting, execute_req(ids(), b))
    assert r.code == 200, repr(r)
    # The last hop counts; one that is not an address falls back to the peer.
    assert redis("GET", rl_key("rl:ip", b, "10.9.8.7")) == "2"
    assert redis("GET", rl_key("rl:ip", b, "2001:db8::1")) == "1"
    assert redis("GET", rl_key("rl:ip", b, "127.0.0.1")) == "3"
    assert redis("EXISTS", rl_key("rl:ip", b, "1.2.3.4")) == 0


# ---- the connection cap ------------------------------------------------------------------


def test_connection_cap(gateway_with):
    gw = gateway_with({"http.max-connections": 50})
    port = gw.conf.http_port
    health = http_bytes("GET", "/healthz")
    held = []
    try:
        for _ in range(50):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            held.append(s)
            s.sendall(health)
            assert read_raw_reply(s).code == 200   # served, and kept alive
        # The 51st connects (into the listen backlog) but is not served.
        extra = socket.create_connection(("127.0.0.1", port), timeout=1)
        held.append(extra)
        extra.sendall(health)
        with pytest.raises(socket.timeout):
            extra.recv(1)
        # The held connections still are.
        held[0].sendall(health)
        assert read_raw_reply(held[0]).code == 200
        # Closing one lets it in.
        held[1].close()
        extra.settimeout(5)
        r = read_raw_reply(extra)
        assert r.code == 200, repr(r)
        # Two pauses: at the 50th connection, and again when the waiting 51st took the
        # place the closed one left (49 -> resumed -> 50). Read on a held connection: the
        # gateway is at its cap again, a new one would wait in the backlog.
        held[0].sendall(http_bytes("GET", "/metrics"))
        page = read_raw_reply(held[0])
        assert page.code == 200, repr(page)
        pauses = [line for line in page.text.splitlines() if line.startswith("seckill_http_accept_pauses_total ")]
        assert pauses == ["seckill_http_accept_pauses_total 2"], pauses
    finally:
        for s in held:
            s.close()


# ---- /metrics on its own listener ----------------------------------------------------------


def test_metrics_on_its_own_port_or_off(gateway_with):
    metrics_port = free_port()
    gw = gateway_with({"http.metrics-port": metrics_port})
    r = send(gw, http_bytes("GET", "/metrics"))
    assert r.code == 404 and r.status == "NOT_FOUND", repr(r)
    page = raw_http(metrics_port, http_bytes("GET", "/metrics"))
    assert page.code == 200 and page.headers.get("Content-Type", "").startswith("text/plain"), repr(page)
    assert "seckill_http_open_connections " in page.text, page.text[:300]
    # That listener serves /metrics and nothing else.
    r = raw_http(metrics_port, http_bytes("GET", "/healthz")).reply()
    assert r.code == 404 and r.status == "NOT_FOUND", repr(r)
    r = raw_http(metrics_port, http_bytes("POST", "/metrics")).reply()
    assert r.code == 405 and r.headers.get("Allow") == "GET, HEAD", repr(r)
    # The API is as before on the main port.
    assert send(gw, http_bytes("GET", "/healthz")).code == 200

    off = gateway_with({"http.metrics-port": "off"})
    r = send(off, http_bytes("GET", "/metrics"))
    assert r.code == 404 and r.status == "NOT_FOUND", repr(r)
    assert send(off, http_bytes("GET", "/healthz")).code == 200

    # Anything else stops start-up, naming the key.
    for bad in ("on", "0", "70000", "-1", off.conf.http_port):
        p = subprocess.run([str(BIN / "seckill-server"), "-c", str(off.conf.path),
                            "--set", f"http.metrics-port={bad}"],
                           capture_output=True, text=True, timeout=30, env=child_env())
        assert p.returncode == 2 and "http.metrics-port" in p.stderr, (bad, p.returncode, p.stderr)
