"""A sale's refusals by reason (gateway/refusals.h; docs/administration.md, "activity show"):
each gateway counts what it refused per sale and adds it to the sale's activity hash every
seckill.refusal-stats-interval-ms, so `seckillctl activity show`, the admin API and the
console report exactly what the buyers were told, summed over gateways, never counted
twice, and a request naming a sale that does not exist leaves nothing in Redis."""

import collections
import json
import time

from gatewayhttp import Api
from luabody import lua_body
from stack import poll_until

# One user's fourth attempt in a minute is RATE_LIMITED.
CONF_OVERRIDES = {"seckill.max-requests-per-user": "3"}


def refused(ctl, activity_id):
    return json.loads(ctl.run_ok("--json", "activity", "show", activity_id).stdout).get("refused")


def told(replies):
    """What the buyers were refused with, by status, as the answers said."""
    return dict(collections.Counter(r["status"] for r in replies if r.code != 200))


def settled(ctl, activity_id, want, conf):
    """Polls until activity show reports `want`, then checks that it stays so for two more
    adds of every gateway (nothing is added twice)."""
    state = {}
    interval_s = int(conf.get("seckill.refusal-stats-interval-ms")) / 1000

    def same():
        state["last"] = refused(ctl, activity_id)
        return state["last"] == want

    poll_until(same, 10 + 4 * interval_s, f"activity show's refused to be {want} (last {state.get('last')})")
    time.sleep(2.5 * interval_s)  # two more timer ticks of every gateway, which must add nothing
    assert refused(ctl, activity_id) == want


def test_activity_show_reports_what_buyers_were_told(ctl, api, gateway, redis, conf, ids):
    sale = ctl.create_sale(2)
    a = sale.activity_id
    assert refused(ctl, a) == {}
    winners = [ids(), ids()]
    replies = [api.execute(u, a) for u in winners]
    assert all(r.code == 200 for r in replies), replies
    late = [api.execute(ids(), a) for _ in range(5)]
    again = [api.execute(winners[0], a) for _ in range(4)]  # DUPLICATE, then the per-user limit
    want = told(late + again)
    assert want.get("OUT_OF_STOCK") == 5 and want.get("DUPLICATE", 0) >= 1, want
    assert "RATE_LIMITED" in want, want
    settled(ctl, a, want, conf)
    text = ctl.run_ok("activity", "show", a).stdout
    assert f"refused    {sum(want.values())}: OUT_OF_STOCK 5" in text, text


def test_gateways_add_up_and_unknown_sales_leave_nothing(ctl, api, gateway, gateway_with, redis, conf, ids):
    sale = ctl.create_sale(1)
    a = sale.activity_id
    other = Api(gateway_with({}).base_url)
    assert api.execute(ids(), a).code == 200
    replies = [api.execute(ids(), a) for _ in range(3)] + [other.execute(ids(), a) for _ in range(4)]
    settled(ctl, a, told(replies), conf)
    assert refused(ctl, a) == {"OUT_OF_STOCK": 7}

    unknown = a + 10**9
    r = api.execute(ids(), unknown)
    assert r.code == 404 and r["status"] == "NOT_FOUND", repr(r)
    time.sleep(2.5 * int(conf.get("seckill.refusal-stats-interval-ms")) / 1000)
    assert redis("EXISTS", conf.key("activity", unknown)) == 0


def test_counting_off_counts_nothing(ctl, gateway_with, redis, conf, ids):
    sale = ctl.create_sale(1)
    a = sale.activity_id
    off = Api(gateway_with({"seckill.refusal-stats-interval-ms": "0"}).base_url)
    assert off.execute(ids(), a).code == 200
    assert off.execute(ids(), a)["status"] == "OUT_OF_STOCK"
    time.sleep(2.5)
    assert refused(ctl, a) == {}


def test_the_script_adds_to_live_sales_only(redis, conf):
    """refused.lua never makes a hash that looks like a sale, nor writes an archived one."""
    body = lua_body("refused")
    key = conf.key("activity", 10**12 + 7)
    try:
        assert redis("EVAL", body, 1, key, "OUT_OF_STOCK", "3") == 0
        assert redis("EXISTS", key) == 0
        redis("HSET", key, "stock", "5")
        assert redis("EVAL", body, 1, key, "OUT_OF_STOCK", "3", "DUPLICATE", "1") == 1
        assert redis("EVAL", body, 1, key, "OUT_OF_STOCK", "2") == 1
        assert redis("HGET", key, "refused:OUT_OF_STOCK") == "5"
        assert redis("HGET", key, "refused:DUPLICATE") == "1"
        redis("HSET", key, "archived", "1")
        assert redis("EVAL", body, 1, key, "OUT_OF_STOCK", "9") == 0
        assert redis("HGET", key, "refused:OUT_OF_STOCK") == "5"
    finally:
        redis("DEL", key)
