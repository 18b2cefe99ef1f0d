"""kill -9 of the gateway in the middle of a sale, then a restart: every order it answered
200 is persisted, the reservations it left behind either reach MySQL (their order was in
Kafka) or expire and give their stock back, and Redis and MySQL agree (I1-I5)."""

import threading
import time

import pytest

from sales import order_rows, success_count, wait_for_consumer

from stack import poll_until
from gatewayhttp import Attempt, describe_failures, run_load

STOCK = 3000
THREADS = 32

CONF_OVERRIDES = {
    # Reservations cut off by the kill expire quickly through the restarted gateway.
    "seckill.pre-reduce-timeout": "3",
    "seckill.reaper-interval-ms": "100",
    # The killed gateway's reservations come back once its node lease lapsed and the
    # restarted gateway's grace passed (reaper.c): 2 + 0.5 + 2.5 s after the kill.
    "seckill.node-lease-ms": "2000",
    "redis.reconnect-max-ms": "500",
    "http.request-timeout-ms": "2500",
    "redis.timeout-ms": "500",
    "kafka.producer.message.timeout.ms": "1000",
}


@pytest.fixture(scope="module")
def sale(ctl, gateway, consumer):
    return ctl.create_sale(STOCK)


def test_gateway_kill9_mid_sale(conf, gateway, consumer, sale, ctl, mysql, redis):
    a = sale.activity_id
    base = int(time.time() * 1000) % 10**12 * 1000
    first = [Attempt(base + i, a) for i in range(1, 2001)]
    stop = threading.Event()
    result = {}
    load = threading.Thread(
        target=lambda: result.setdefault("done", run_load(conf.http_port, first, THREADS, stop=stop)),
        daemon=True)
    load.start()
    poll_until(lambda: redis("HLEN", conf.key("users", a)) >= 500, 60, "500 orders before the kill",
               interval=0.01)
    gateway.kill9()
    stop.set()
    load.join(60)
    assert not load.is_alive()
    gateway.start()

    # The restarted gateway sells on, with order numbers of its own.
    second = run_load(conf.http_port, [Attempt(base + 5000 + i, a) for i in range(1, 201)], THREADS)
    bad = [x for x in second if x.error is not None or x.reply.code != 200]
    assert not bad, describe_failures(bad)

    done = result["done"] + second
    sent = [x for x in done if x.sent is not None]
    ok = [x for x in sent if x.reply is not None and x.reply.code == 200]
    other = [x for x in sent if x.reply is not None and x.reply.code != 200]
    cut = [x for x in sent if x.error is not None]
    print(f"\n{len(ok)} accepted, {len(cut)} cut off by the kill")
    assert not other, describe_failures(other)

    rows_count = wait_for_consumer(mysql, redis, conf, a, None, consumer, timeout=60)
    rows = order_rows(mysql, a)
    accepted = {x.reply["orderNo"]: x.user for x in ok}
    assert len(accepted) == len(ok), "two accepted orders share an order number"
    missing = set(accepted) - set(rows)
    assert not missing, f"{len(missing)} orders answered 200 are not in MySQL, e.g. {sorted(missing)[:5]}"
    assert all(rows[o] == u for o, u in accepted.items())
    # Orders nobody was told about come only from requests the kill cut off.
    unanswered = {o: u for o, u in rows.items() if o not in accepted}
    assert set(unanswered.values()) <= {x.user for x in cut}, "an order appeared for a user never sent"
    assert len(set(rows.values())) == len(rows), "a user holds two orders"

    assert rows_count == success_count(redis, conf, a)
    stock_left = int(redis("GET", conf.key("stock", a)))
    assert stock_left + rows_count == STOCK, (
        f"I3: stock {stock_left} + {rows_count} orders != {STOCK}")
    assert mysql.count(f"SELECT sold_count FROM seckill_activity WHERE id = {a}") == rows_count
    verify = ctl("verify", a)
    assert verify.rc == 0, repr(verify)
