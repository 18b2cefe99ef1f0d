"""An order durably in Kafka must not expire because the consumer lags (docs/design.md,
"Reservations: confirm or expire, never both"): with no consumer running for longer than
seckill.pre-reduce-timeout, the reaper leaves every accepted order alone, and the
consumer that comes up later persists all of them."""

import time

import pytest

from sales import order_rows, wait_for_consumer

from stack import Consumer
from gatewayhttp import Attempt, describe_failures, run_load

STOCK = 400
USERS = 600
THREADS = 128

CONF_OVERRIDES = {
    # A short reservation lifetime (it must exceed the request timeout), reaped often.
    "seckill.pre-reduce-timeout": "3",
    "seckill.reaper-interval-ms": "100",
    "http.request-timeout-ms": "2500",
    "redis.timeout-ms": "500",
    "kafka.producer.message.timeout.ms": "1000",
    # Deliveries come back in bursts of many orders, as under real load.
    "kafka.producer.linger.ms": "50",
}


@pytest.fixture(scope="module")
def late_consumer(conf, logdir):
    """A consumer this module starts only after the reservations have grown old."""
    c = Consumer(conf, logdir)
    yield c
    c.finish()


@pytest.fixture(scope="module")
def sale(ctl, gateway):
    return ctl.create_sale(STOCK)


def test_lagging_consumer_loses_nothing(conf, gateway, late_consumer, sale, ctl, mysql, redis):
    a = sale.activity_id
    base = int(time.time() * 1000) % 10**12 * 1000
    done = run_load(conf.http_port, [Attempt(base + i, a) for i in range(1, USERS + 1)], THREADS)
    last_reply = time.monotonic()
    errors = [x for x in done if x.error is not None or x.reply.code >= 500]
    assert not errors, describe_failures(errors)
    accepted = {x.reply["orderNo"]: x.user for x in done if x.reply.code == 200}
    assert len(accepted) == STOCK

    # Every accepted order is in Kafka (reply-after-ack): none may be released. Watch
    # the orders through a reservation lifetime and a few reaper passes.
    orders = conf.key("orders", a)
    deadline = last_reply + int(conf.get("seckill.pre-reduce-timeout")) + 1.5
    while time.monotonic() < deadline:
        failed = [o for o, s in zip(*[iter(redis("HGETALL", orders))] * 2) if s == "FAILED"]
        assert not failed, (f"{len(failed)} accepted orders expired while the consumer was "
                            f"away, e.g. {failed[:5]}; gateway log:\n{gateway.log_tail(20)}")
        time.sleep(0.1)
    assert redis("GET", conf.key("stock", a)) == "0", "expired reservations gave stock back"

    late_consumer.start()
    wait_for_consumer(mysql, redis, conf, a, STOCK, late_consumer)
    assert order_rows(mysql, a) == accepted
    verify = ctl("verify", a)
    assert verify.rc == 0, repr(verify)
