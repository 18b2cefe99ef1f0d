"""Two gateways and a Redis that stalls longer than seckill.pre-reduce-timeout mid-sale:
every order answered 200 ends SUCCESS.

During the stall each gateway goes on delivering the orders it had reserved (Kafka is up)
and answers 200, but cannot mark them queued. When Redis answers again, both reapers see
reservations older than the timeout. A gateway reaps only its own and those of nodes that
have held no lease for a whole grace while it was connected (src/gateway/reaper.c), so it
never expires an order that the other, live gateway delivered."""

import collections
import os
import signal
import threading
import time

from gatewayhttp import Api

from stack import ROOT, poll_until

TIMEOUTS = {
    "redis.timeout-ms": "300",
    "redis.reconnect-max-ms": "500",
    "kafka.producer.message.timeout.ms": "1000",
    "http.request-timeout-ms": "2500",
    "seckill.pre-reduce-timeout": "3",
    "seckill.node-lease-ms": "2000",
    "seckill.reaper-interval-ms": "200",
}
CONF_OVERRIDES = TIMEOUTS
STALL_S = 6  # longer than the pre-reduce timeout and the node lease


def test_every_200_ends_success_when_redis_stalls_past_the_reservation_timeout(
        gateway_with, consumer, ctl, base_conf, mysql, ids):
    gateways = [gateway_with(TIMEOUTS), gateway_with(TIMEOUTS)]
    apis = [Api(g.base_url) for g in gateways]
    sale = ctl.create_sale(stock=100000)
    accepted = []
    statuses = collections.Counter()
    lock = threading.Lock()
    stop = threading.Event()

    def load(api):
        while not stop.is_set():
            r = api.execute(ids(), sale.activity_id)
            with lock:
                statuses[r.code] += 1
                if r.code == 200:
                    accepted.append(r.json["orderNo"])

    threads = [threading.Thread(target=load, args=(apis[i % 2],)) for i in range(8)]
    for t in threads:
        t.start()
    redis_pid = int((base_conf.data_dir(ROOT) / "redis" / "redis.pid").read_text().strip())
    try:
        poll_until(lambda: len(accepted) >= 200, 30, "200 orders accepted before the stall")
        os.kill(redis_pid, signal.SIGSTOP)
        time.sleep(STALL_S)  # the fault's length, not a wait for a condition
    finally:
        os.kill(redis_pid, signal.SIGCONT)
    try:
        poll_until(lambda: len(accepted) >= 400 and statuses[200] > 0, 30, "sales going on after the stall")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert set(statuses) <= {200, 503}, statuses

    def outcome():
        rows = mysql.rows(f"SELECT order_no FROM seckill_order WHERE activity_id = {sale.activity_id}")
        return {r[0] for r in rows}

    poll_until(lambda: set(accepted) <= outcome(), 60,
               f"all {len(accepted)} accepted orders in MariaDB")
    persisted = outcome()
    assert persisted == set(accepted), f"{len(persisted - set(accepted))} rows nobody was told 200"
    r = ctl("verify", sale.activity_id)
    assert r.rc == 0, repr(r)
