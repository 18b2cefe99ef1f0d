"""Sales as the tests make and read them: seckillctl (Ctl, its results), a sale (Sale),
and the state of a sale in Redis and MySQL (live reservations, SUCCESS orders, rows), with
the wait until the consumer has caught up with one."""

import subprocess
import time

import pytest
import requests

from luabody import lua_body
from stack import BIN, ROOT, child_env, poll_until

# ---- seckillctl --------------------------------------------------------------------------


class CtlResult:
    def __init__(self, args, rc, stdout, stderr):
        self.args, self.rc, self.stdout, self.stderr = args, rc, stdout, stderr

    def __iter__(self):
        return iter((self.rc, self.stdout, self.stderr))

    def __repr__(self):
        return (f"seckillctl {' '.join(self.args)} -> rc {self.rc}\n"
                f"stdout: {self.stdout.strip()}\nstderr: {self.stderr.strip()}")

    def last_line(self):
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        return lines[-1].strip() if lines else ""


class Sale:
    def __init__(self, activity_id, coupon_id, stock):
        self.activity_id, self.coupon_id, self.stock = activity_id, coupon_id, stock

    def __repr__(self):
        return f"Sale(activity={self.activity_id}, coupon={self.coupon_id}, stock={self.stock})"


class Ctl:
    def __init__(self, conf):
        self.conf = conf
        self.binary = BIN / "seckillctl"

    def __call__(self, *args, timeout=120):
        args = [str(a) for a in args]
        p = subprocess.run([str(self.binary), "-c", str(self.conf.path)] + args, cwd=ROOT,
                           env=child_env(), capture_output=True, text=True, timeout=timeout)
        return CtlResult(args, p.returncode, p.stdout, p.stderr)

    def run_ok(self, *args):
        r = self(*args)
        assert r.rc == 0, repr(r)
        return r

    def create_id(self, *args):
        r = self.run_ok(*args)
        text = r.last_line()
        assert text.isdigit(), f"expected an id alone on the last line: {r!r}"
        return int(text)

    def create_sale(self, stock, start="now", end="+1h", name=None, per_user=None):
        coupon = self.create_id("coupon", "create", "--name", "t", "--type", "CASH",
                                "--amount", "5.00", "--min-order", "10.00",
                                "--total", stock * 2, "--start", "-1m", "--end", "+1d")
        args = ["activity", "create", "--coupon", coupon, "--stock", stock,
                "--start", start, "--end", end]
        if name:
            args += ["--name", name]
        if per_user is not None:
            args += ["--per-user", per_user]
        return Sale(self.create_id(*args), coupon, stock)


# ---- sale state --------------------------------------------------------------------------


def won_coupon(ctl, api, mysql, redis, ids):
    """A user and the user coupon they won through the normal gateway, in Redis."""
    sale = ctl.create_sale(2)
    user = ids()
    r = api.execute(user, sale.activity_id)
    assert r.code == 200, repr(r)
    order_no = r["orderNo"]
    poll_until(lambda: api.order_status(order_no) == "SUCCESS", 20, f"order {order_no} to be SUCCESS")
    uc_id = int(poll_until(lambda: mysql.rows(f"SELECT id FROM user_coupon WHERE source_ref = '{order_no}'"),
                           20, "the user coupon row")[0][0])
    key = f"seckill:ucoupon:{{u{user}}}"
    poll_until(lambda: redis("HEXISTS", key, str(uc_id)) == 1, 20, "the coupon record in Redis")
    return user, uc_id, key


def execute_script(redis, conf, activity_id, user, order_no, accepted_ms):
    """The Redis half of an execute, as a gateway that died before producing leaves it."""
    keys = [conf.key(k, activity_id) for k in ("activity", "stock", "users", "orders", "resv")]
    keys += [f"seckill:{k}:{{{activity_id}}}:{user}" for k in ("rl:user", "rl:ip", "brush", "ban", "token")]
    args = ["0", "1000", "1000", "0", "1000", "60", "0", str(user), order_no, str(accepted_ms)]
    verdicts = redis("EVAL", lua_body("execute"), len(keys), *keys, *args)
    assert verdicts[0][0] == "OK", verdicts


def live_reservations(redis, conf, activity_id):
    """Orders Redis still holds between accept and SUCCESS/FAILED."""
    return (redis("ZCARD", conf.key("resv", activity_id))
            + redis("SCARD", conf.key("queued", activity_id))
            + redis("SCARD", conf.key("claimed", activity_id)))


def buy_order(conf, user, activity):
    """One order through the module's gateway, which must accept it: its order number."""
    r = requests.post(f"{conf.base_url}/seckill/execute", params={"userId": user, "activityId": activity},
                      timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["orderNo"]


def order_rows(mysql, activity_id):
    """{order_no: user_id} of the activity's rows in seckill_order."""
    rows = mysql.rows(f"SELECT order_no, user_id FROM seckill_order WHERE activity_id = {activity_id}")
    return {r[0]: int(r[1]) for r in rows}


def success_count(redis, conf, activity_id):
    return sum(1 for s in redis("HVALS", conf.key("orders", activity_id)) or [] if s == "SUCCESS")


def wait_for_consumer(mysql, redis, conf, activity_id, expected_rows=None, consumer=None, timeout=90):
    """Polls until Redis has no live reservation of the activity left (every accepted
    order confirmed and finalized, or released) and MySQL holds `expected_rows` orders of
    it; with expected_rows None, as many as Redis counts SUCCESS orders. Returns the
    number of rows."""
    state = {}

    def caught_up():
        state["live"] = live_reservations(redis, conf, activity_id)
        want = expected_rows if expected_rows is not None else success_count(redis, conf, activity_id)
        state["rows"] = mysql.count(
            f"SELECT COUNT(*) FROM seckill_order WHERE activity_id = {activity_id}")
        state["want"] = want
        return state["rows"] == want and state["live"] == 0

    deadline = time.monotonic() + timeout
    while not caught_up():
        if expected_rows is not None and state["rows"] > expected_rows:
            break
        if time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    else:
        return state["rows"]
    tail = f"\nconsumer log:\n{consumer.log_tail(30)}" if consumer else ""
    pytest.fail(f"activity {activity_id}: expected {state['want']} rows and no live "
                f"reservation, have {state['rows']} rows and {state['live']} live "
                f"reservations after {timeout}s{tail}")
