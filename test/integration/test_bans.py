"""Manual bans (seckillctl ban, /admin/bans; docs/protection.md "Manual bans") against the
real services: a ban reaches every gateway within the refresh interval and refuses its user
or address with 429 BLOCKED before the execute script (and before a purchase token), for
one sale or for all; it ends by itself or by `ban remove`; the list says who set it and
when; bad input writes nothing to MySQL or Redis; the admin API does what the CLI does.

Every ban here is on a fresh user or on an address range no other test sends from, and is
removed at the test's end, so that nothing else on the stack meets it."""

import calendar
import json
import os
import pwd
import socket
import time
from contextlib import contextmanager

import pytest
import requests

from adminhttp import Admin
from gatewayhttp import Reply, gateway_metrics
from stack import free_port, poll_until

TOKEN = "t0k3n-for-the-manual-ban-tests-0123456789"
REFRESH_MS = 200
CONF_OVERRIDES = {"admin.port": free_port(), "admin.token": TOKEN, "seckill.activity-refresh-ms": REFRESH_MS}
# The gateways the tests start themselves refresh as often.
FAST = {"seckill.activity-refresh-ms": REFRESH_MS}
# How long a ban may take to reach a gateway: one refresh, and room for a loaded machine
# running sanitizer builds.
REACH = REFRESH_MS / 1000 + 5
TOKEN_SECRET = "integration-purchase-token-secret-for-bans-0123"
# Address ranges no other test sends from (shared address space, documentation prefix).
RANGE4, INSIDE4, OUTSIDE4 = "100.64.77.0/24", "100.64.77.9", "100.64.78.9"
RANGE6, INSIDE6, OUTSIDE6 = "2001:db8:bad::/48", "2001:db8:bad:1::7", "2001:db8:bae::7"
BANS_KEY = "seckill:bans"


@pytest.fixture(scope="module")
def admin(admin_server):
    return Admin(f"http://127.0.0.1:{admin_server.port}", TOKEN)


@pytest.fixture(scope="module")
def sale(ctl, gateway, consumer):
    return ctl.create_sale(50)


def execute(gw, user, activity, xff=None):
    headers = {"X-Forwarded-For": xff} if xff else {}
    r = requests.post(f"{gw.base_url}/seckill/execute", params={"userId": user, "activityId": activity},
                      headers=headers, timeout=30)
    return Reply(r.status_code, r.headers, r.text, f"execute user {user} activity {activity} xff {xff}")


def get_token(gw, user, activity):
    r = requests.get(f"{gw.base_url}/seckill/token", params={"userId": user, "activityId": activity}, timeout=30)
    return Reply(r.status_code, r.headers, r.text, f"token user {user} activity {activity}")


def refused_as_banned(r, what="your account"):
    return r.code == 429 and r.status == "BLOCKED" and r["message"].startswith(what) and "banned" in r["message"]


def wait_refused(gw, user, activity, xff=None, what="your account"):
    """The first execute the gateway refuses as banned (polled until the ban reached it)."""
    return poll_until(lambda: (lambda r: r if refused_as_banned(r, what) else None)(execute(gw, user, activity, xff)),
                      REACH, f"user {user} (xff {xff}) to be refused on {gw.base_url}")


def wait_lifted(gw, user, activity, xff=None):
    """The first answer that is the sale's own: 200, or DUPLICATE when a request of the user
    bought before the ban reached the gateway (the polls above do not know when it does)."""
    def sale_answers(r):
        return r if r.code == 200 or r.status == "DUPLICATE" else None
    return poll_until(lambda: sale_answers(execute(gw, user, activity, xff)), REACH,
                      f"user {user} (xff {xff}) to be served on {gw.base_url}")


def retry_after(r):
    value = r.headers.get("Retry-After")
    assert value is not None and value.isdigit() and int(value) == r["retryAfter"], (r, dict(r.headers))
    return int(value)


def ban_list(ctl, *args):
    r = ctl("--json", "ban", "list", *args)
    assert r.rc == 0, repr(r)
    return {b["id"]: b for b in json.loads(r.last_line())["bans"]}


@contextmanager
def ban(ctl, *args):
    """`seckillctl ban add ARGS`: its id, and the ban removed at the end whatever happens."""
    ban_id = ctl.create_id("ban", "add", *args)
    try:
        yield ban_id
    finally:
        ctl("ban", "remove", ban_id)


def state(mysql, redis):
    """What a refused ban command must leave as it was."""
    rows = mysql.rows("SELECT COUNT(*), COALESCE(MAX(id), 0), COUNT(removed_at) FROM seckill_ban")[0]
    return rows, redis("HGETALL", BANS_KEY)


def me():
    return f"{pwd.getpwuid(os.geteuid()).pw_name}@{socket.gethostname()}"


# ---- a user ------------------------------------------------------------------------------


def test_a_banned_user_is_refused_on_every_gateway(ctl, gateway, gateway_with, sale, redis, ids):
    other_gateway = gateway_with(FAST)
    a = sale.activity_id
    user, quiet = ids(), ids()
    started = time.monotonic()
    with ban(ctl, "--user", quiet, "--for", "10m"), ban(ctl, "--user", user, "--for", "10m", "--reason", "bot"):
        for gw in (gateway, other_gateway):
            r = wait_refused(gw, user, a)
            assert r["message"] == "your account is banned from every sale", repr(r)
            assert r["orderNo"] is None and r["userId"] == user and r["activityId"] == a, repr(r)
            assert 590 <= retry_after(r) <= 600, repr(r)
        reached = time.monotonic() - started
        # A gateway started later has it from its first read.
        late = gateway_with(FAST)
        wait_refused(late, user, a)
        # Everybody else buys, on every gateway.
        for gw in (gateway, other_gateway, late):
            r = execute(gw, ids(), a)
            assert r.code == 200, repr(r)
        # Refused before the script: the per-sale counter the script keeps of every request
        # of a user is never written for one whose first request met the ban (`quiet`,
        # banned before `user`, whose refusal shows the ban list has reached the gateway).
        other = ids()
        assert execute(gateway, other, a).code == 200
        assert refused_as_banned(execute(gateway, quiet, a))
        assert redis("EXISTS", f"seckill:rl:user:{{{a}}}:{other}") == 1
        assert redis("EXISTS", f"seckill:rl:user:{{{a}}}:{quiet}") == 0
        for gw in (gateway, other_gateway, late):
            samples = gateway_metrics(gw.conf.http_port)
            assert samples["seckill_bans_refused_total"] >= 1, samples
            assert samples["seckill_bans_in_force"] >= 1, samples
    assert reached < REACH, reached


def test_a_sale_ban_leaves_other_sales_alone(ctl, gateway, sale, ids):
    other_sale = ctl.create_sale(5).activity_id
    user = ids()
    with ban(ctl, "--user", user, "--activity", sale.activity_id, "--for", "1h") as ban_id:
        r = wait_refused(gateway, user, sale.activity_id)
        assert r["message"] == "your account is banned from this sale", repr(r)
        r = execute(gateway, user, other_sale)
        assert r.code == 200, repr(r)
        assert ban_id in ban_list(ctl, "--activity", sale.activity_id)
        assert ban_id not in ban_list(ctl, "--activity", other_sale)


def test_an_address_range_is_banned_through_a_trusted_forwarded_for_only(ctl, gateway, gateway_with, sale, ids):
    trusting = gateway_with(dict(FAST, **{"http.trust-forwarded-for": "true"}))
    a = sale.activity_id
    with ban(ctl, "--ip", RANGE4, "--activity", a, "--for", "1h"), ban(ctl, "--ip", RANGE6, "--activity", a,
                                                                        "--for", "1h"):
        r = wait_refused(trusting, ids(), a, INSIDE4, what="your address")
        assert r["message"] == "your address is banned from this sale", repr(r)
        wait_refused(trusting, ids(), a, INSIDE6, what="your address")
        for xff in (OUTSIDE4, OUTSIDE6, f"{INSIDE4}, 198.51.100.4"):  # a forged first hop does not count
            r = execute(trusting, ids(), a, xff)
            assert r.code == 200, f"{xff}: {r!r}"
        # Not trusted: the header is the client's to forge, the peer (127.0.0.1) counts.
        poll_until(lambda: gateway_metrics(gateway.conf.http_port)["seckill_bans_in_force"] >= 2, REACH,
                   "the module's gateway to hold the bans")
        r = execute(gateway, ids(), a, INSIDE4)
        assert r.code == 200, repr(r)
        # Another sale is not concerned.
        r = execute(trusting, ids(), ctl.create_sale(5).activity_id, INSIDE4)
        assert r.code == 200, repr(r)


def test_a_banned_user_gets_no_purchase_token(ctl, gateway_with, ids):
    gw = gateway_with(dict(FAST, **{"seckill.require-token": "true", "seckill.token-secret": TOKEN_SECRET}))
    a = ctl.create_sale(5).activity_id
    user, other = ids(), ids()
    poll_until(lambda: get_token(gw, other, a).code == 200, REACH, "the sale in the gateway's cache")
    with ban(ctl, "--user", user, "--for", "1h"):
        r = poll_until(lambda: (lambda r: r if r.code == 429 else None)(get_token(gw, user, a)), REACH,
                       "the token to be refused")
        assert r.status == "BLOCKED" and "banned" in r["message"], repr(r)
        assert retry_after(r) > 0
        r = get_token(gw, other, a)
        assert r.code == 200 and r["token"], repr(r)


# ---- the end of a ban --------------------------------------------------------------------


def test_expiry_lifts_a_ban_without_any_command(ctl, gateway, sale, redis, ids):
    user = ids()
    added = time.monotonic()
    ban_id = ctl.create_id("ban", "add", "--user", user, "--for", "3s")
    r = wait_refused(gateway, user, sale.activity_id)
    assert 1 <= retry_after(r) <= 3, repr(r)
    assert redis("HEXISTS", BANS_KEY, str(ban_id)) == 1
    wait_lifted(gateway, user, sale.activity_id)
    assert time.monotonic() >= added + 3 - 0.2, "accepted before the ban's end"
    # Listed as expired; the next ban command takes its record out of Redis.
    assert ban_id not in ban_list(ctl)
    assert ban_list(ctl, "--all")[ban_id]["state"] == "expired"
    assert redis("HEXISTS", BANS_KEY, str(ban_id)) == 0


def test_ban_remove_lifts_it(ctl, gateway, sale, mysql, redis, ids):
    user = ids()
    user_ban = ctl.create_id("ban", "add", "--user", user, "--for", "1h")
    wait_refused(gateway, user, sale.activity_id)
    r = ctl("ban", "remove", user_ban)
    assert r.rc == 0 and f"ban {user_ban} (user {user}) removed" in r.stdout, repr(r)
    assert redis("HEXISTS", BANS_KEY, str(user_ban)) == 0
    wait_lifted(gateway, user, sale.activity_id)
    removed_at, removed_by = mysql.rows(f"SELECT removed_at, removed_by FROM seckill_ban WHERE id = {user_ban}")[0]
    assert removed_at != "NULL" and removed_by.startswith(me()), (removed_at, removed_by)
    # Again: nothing more recorded.
    r = ctl("ban", "remove", user_ban)
    assert r.rc == 0 and "was removed already" in r.stdout and removed_by in r.stdout, repr(r)
    assert mysql.rows(f"SELECT removed_at FROM seckill_ban WHERE id = {user_ban}")[0][0] == removed_at


def test_sync_gives_back_what_redis_lost(ctl, gateway, sale, redis, ids):
    user = ids()
    with ban(ctl, "--user", user, "--for", "1h") as ban_id:
        wait_refused(gateway, user, sale.activity_id)
        # Redis loses the field (a failover that lost the write): no gateway enforces it.
        redis("HDEL", BANS_KEY, str(ban_id))
        redis("HSET", BANS_KEY, "version", "lost")
        wait_lifted(gateway, user, sale.activity_id)
        r = ctl("ban", "list")
        assert r.rc == 0 and "not in Redis" in r.stdout and "ban sync" in r.stderr, repr(r)
        assert ban_list(ctl)[ban_id]["enforced"] is False
        r = ctl("ban", "sync")
        assert r.rc == 0 and "written to Redis" in r.stdout, repr(r)
        assert redis("HEXISTS", BANS_KEY, str(ban_id)) == 1
        assert ban_list(ctl)[ban_id]["enforced"] is True
        wait_refused(gateway, user, sale.activity_id)


# ---- the list ----------------------------------------------------------------------------


def test_the_list_says_who_set_each_ban_and_when(ctl, ids):
    user = ids()
    before = time.time()
    with ban(ctl, "--user", user, "--for", "2h", "--reason", "chargeback fraud") as ban_id:
        after = time.time()
        b = ban_list(ctl)[ban_id]
        assert b["kind"] == "user" and b["userId"] == user and b["cidr"] is None and b["activityId"] is None, b
        assert b["state"] == "active" and b["enforced"] is True and b["reason"] == "chargeback fraud", b
        assert b["createdBy"].startswith(me()), b
        created = calendar.timegm(time.strptime(b["createdAt"][:19], "%Y-%m-%dT%H:%M:%S"))
        assert before - 2 <= created <= after + 2, (b, before, after)
        assert b["removedAt"] is None and b["removedBy"] is None, b
        r = ctl("ban", "list")
        assert r.rc == 0, repr(r)
        head = r.stdout.splitlines()[0].split()
        assert head[:3] == ["ban", "subject", "sale"] and "by" in head and "at" in head, r.stdout
        line = next(line for line in r.stdout.splitlines() if line.split()[0] == str(ban_id))
        assert f"user {user}" in line and "all" in line and me() in line and "chargeback fraud" in line, line
        assert b["createdAt"] in line, line
    b = ban_list(ctl, "--all")[ban_id]
    assert b["state"] == "removed" and b["removedBy"].startswith(me()) and b["removedAt"], b
    r = ctl("ban", "list", "--all")
    line = next(line for line in r.stdout.splitlines() if line.split()[0] == str(ban_id))
    assert "removed" in line and b["removedAt"] in line, line


# ---- bad input ---------------------------------------------------------------------------

BAD_ADDS = [
    (["--ip", "10.1.2.3/8", "--for", "1h"], 2, "bits are set past the prefix /8 (the network would be 10.0.0.0/8)"),
    (["--ip", "10.0.0.0/33", "--for", "1h"], 2, "prefix /33 is too long"),
    (["--ip", "2001:db8::/129", "--for", "1h"], 2, "prefix /129 is too long"),
    (["--ip", "not-an-address", "--for", "1h"], 2, "not an IPv4 or IPv6 address"),
    (["--ip", "10.0.0.0/x", "--for", "1h"], 2, "the prefix after '/'"),
    (["--user", "0", "--for", "1h"], 2, "not a positive integer id"),
    (["--user", "{u}", "--for", "0s"], 2, "must be longer than zero"),
    (["--user", "{u}", "--for", "-5m"], 2, "must be longer than zero"),
    (["--user", "{u}", "--for", "10x"], 2, "not a duration"),
    (["--user", "{u}", "--for", "3651d"], 2, "at most 3650d"),
    (["--user", "{u}", "--until", "2020-01-01T00:00:00Z"], 2, "is not in the future"),
    (["--user", "{u}", "--until", "-1m"], 2, "is not in the future"),
    (["--user", "{u}", "--until", "tomorrow"], 2, "not a time"),
    (["--user", "{u}"], 2, "give one of --for DURATION or --until TIME"),
    (["--user", "{u}", "--for", "1h", "--until", "+2h"], 2, "give one of --for DURATION or --until TIME"),
    (["--for", "1h"], 2, "give one of --user UID or --ip ADDR[/PREFIX]"),
    (["--user", "{u}", "--ip", "192.0.2.1", "--for", "1h"], 2, "give one of --user UID or --ip"),
    (["--user", "{u}", "--for", "1h", "--reason", ""], 2, "--reason: must not be empty"),
    (["--user", "{u}", "--for", "1h", "--activity", "0"], 2, "not a positive integer id"),
    (["--user", "{u}", "--for", "1h", "--activity", "999999999999"], 1, "activity 999999999999 does not exist"),
]


def test_bad_input_changes_nothing(ctl, sale, mysql, redis, ids):
    with ban(ctl, "--user", ids(), "--for", "1h"):  # the hash exists, with a version
        before = state(mysql, redis)
        user = str(ids())
        for args, rc, message in BAD_ADDS:
            args = [user if a == "{u}" else a for a in args]
            r = ctl("ban", "add", *args)
            assert r.rc == rc and message in r.stderr and r.stdout == "", repr(r)
        for args, rc, message in ((["x"], 2, "not a positive integer id"), (["999999999999"], 1, "does not exist"),
                                  ([], 2, "missing argument")):
            r = ctl("ban", "remove", *args)
            assert r.rc == rc and message in r.stderr, repr(r)
        for args, message in ((["--all=maybe"], "true or false"), (["--activity", "x"], "not a positive integer"),
                              (["--all", "--all"], "given twice")):
            r = ctl("ban", "list", *args)
            assert r.rc == 2 and message in r.stderr, repr(r)
        assert state(mysql, redis) == before


# ---- the admin API -----------------------------------------------------------------------


def test_the_admin_api_does_what_the_cli_does(admin, ctl, gateway, sale, mysql, redis, ids):
    a = sale.activity_id
    user = ids()
    r = admin.post("/admin/bans", {"userId": user, "activityId": a, "for": "10m", "reason": "api"})
    assert r.code == 201 and r["success"] and r["enforced"] is True, repr(r)
    ban_id = r["id"]
    assert r["kind"] == "user" and r["userId"] == user and r["activityId"] == a and r["state"] == "active", repr(r)
    assert r["createdBy"] == "admin API from 127.0.0.1", repr(r)
    wait_refused(gateway, user, a)
    listed = admin.get("/admin/bans", params={"activityId": str(a)})
    assert listed.code == 200 and ban_id in [b["id"] for b in listed["bans"]], repr(listed)
    cli = ban_list(ctl)[ban_id]
    api = next(b for b in listed["bans"] if b["id"] == ban_id)
    assert cli == api, (cli, api)

    before = state(mysql, redis)
    for body, code, message in (({"ip": "10.1.2.3/8", "for": "1h"}, 400, "ip '10.1.2.3/8': bits are set"),
                                ({"userId": user, "for": "0s"}, 400, "for '0s': must be longer than zero"),
                                ({"userId": user, "until": "2020-01-01T00:00:00Z"}, 400, "not in the future"),
                                ({"userId": user}, 400, "give one of for DURATION or until TIME"),
                                ({"userId": user, "for": "1h", "by": "me"}, 400, "unknown field 'by'"),
                                ({"userId": user, "for": "1h", "activityId": 999999999999}, 404, "does not exist")):
        r = admin.post("/admin/bans", body)
        assert r.code == code and message in r["message"], (body, r)
    r = admin.request("DELETE", "/admin/bans/999999999999")
    assert r.code == 404 and r.status == "NOT_FOUND", repr(r)
    r = admin.get("/admin/bans", params={"all": "maybe"})
    assert r.code == 400 and r.status == "INVALID", repr(r)
    assert state(mysql, redis) == before

    r = admin.request("DELETE", f"/admin/bans/{ban_id}")
    assert r.code == 200 and r["state"] == "removed" and r["alreadyRemoved"] is False, repr(r)
    assert r["removedBy"] == "admin API from 127.0.0.1", repr(r)
    wait_lifted(gateway, user, a)
    r = admin.request("DELETE", f"/admin/bans/{ban_id}")
    assert r.code == 200 and r["alreadyRemoved"] is True, repr(r)
    listed = admin.get("/admin/bans", params={"all": "true"})
    assert listed.code == 200 and any(b["id"] == ban_id and b["state"] == "removed" for b in listed["bans"]), listed
    assert ban_id not in [b["id"] for b in admin.get("/admin/bans")["bans"]]
    r = admin.post("/admin/bans/sync")
    assert r.code == 200 and r["bans"] >= 0, repr(r)
