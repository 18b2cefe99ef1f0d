"""Long polling from the tests' side (docs/longpoll.md): a held GET timed from send to
answer, an order left PROCESSING that only a publish can end, and the gateway's rollback
that ends it. test/integration/test_longpoll.py (single Redis) and
test/cluster/test_longpoll_cluster.py (the tests' Redis Cluster) share them."""

import http.client
import json
import threading
import time

from luabody import lua_body
from sales import execute_script

ORDERNO_EPOCH_MS = 1704067200000
# A node id no gateway of the suite leases: the reaper treats its orders as a dead
# gateway's.
ORPHAN_NODE = 1021
# How long after Redis shows an order final its held request may take to come back: one
# publish and one reply on 127.0.0.1, plus this test's own 50 ms polling of Redis.
WAKE_SLACK_S = 1.0


class Held(threading.Thread):
    """One GET on its own connection, timed from send to answer."""

    def __init__(self, port, path, headers=None):
        super().__init__(daemon=True)
        self.port, self.path, self.send_headers = port, path, headers or {}
        self.code = self.body = self.headers = None
        self.answered_at = None

    def run(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            self.sent_at = time.monotonic()
            c.request("GET", self.path, headers=self.send_headers)
            r = c.getresponse()
            data = r.read()
            self.answered_at = time.monotonic()
            self.code, self.headers = r.status, r.headers
            self.body = json.loads(data or b"{}")
        finally:
            c.close()

    def result(self, timeout=60):
        self.join(timeout)
        assert not self.is_alive(), f"GET {self.path}: no answer within {timeout} s"
        return self.code, self.body


def stuck_order(redis, conf, activity, user, accepted_ms=None, node=ORPHAN_NODE):
    """An order PROCESSING in Redis that no Kafka record backs: it stays so until the reaper
    expires it (pre-reduce-timeout after accepted_ms; by default accepted "in 30 s", so no
    test here sees it expire by itself)."""
    accepted_ms = int(time.time() * 1000) + 30000 if accepted_ms is None else accepted_ms
    snowflake = ((accepted_ms - ORDERNO_EPOCH_MS) << 22) | (node << 12) | (user % 4096)
    order_no = f"{snowflake}-{activity}"
    execute_script(redis, conf, activity, user, order_no, accepted_ms)
    return order_no


def release(redis, conf, activity, order_no):
    """The gateway's rollback of an order (release.lua): FAILED, its stock back."""
    keys = [conf.key(k, activity) for k in ("stock", "users", "orders", "resv", "failed", "activity",
                                             "failedusers")]
    user = next(u for u, o in pairs(redis("HGETALL", conf.key("users", activity))) if o == order_no)
    assert redis("EVAL", lua_body("release"), len(keys), *keys, "order", order_no, user) == 1


def pairs(flat):
    return zip(flat[0::2], flat[1::2])
