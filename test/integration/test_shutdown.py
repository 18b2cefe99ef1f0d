"""SIGTERM to the gateway in the middle of a sale: it stops accepting, answers every
request it took (the order, or 503 UNAVAILABLE), flushes Kafka and exits 0 within its
drain bound; every order it answered 200 reaches SUCCESS in MySQL."""

import http.client
import threading
import time

import pytest

from conftest import order_rows, poll_until, success_count, wait_for_consumer
from gatewayhttp import Attempt, describe_failures, run_load

STOCK = 100000
THREADS = 16

CONF_OVERRIDES = {
    # A short drain bound: request timeout + 2 s of drain + the 5 s Kafka flush.
    "http.request-timeout-ms": "4000",
    "kafka.producer.message.timeout.ms": "2000",
}


@pytest.fixture(scope="module")
def sale(ctl, gateway, consumer):
    return ctl.create_sale(STOCK)


def is_connection_error(e):
    """Refused, reset or closed before an answer: expected around a shutdown. Anything
    else (an answer that is not JSON, a timeout) is a failure."""
    return isinstance(e, (ConnectionError, http.client.RemoteDisconnected,
                          http.client.BadStatusLine)) and not isinstance(e, TimeoutError)


def test_sigterm_drains(conf, gateway, consumer, sale, mysql, redis):
    a = sale.activity_id
    base = int(time.time() * 1000) % 10**12 * 1000
    attempts = [Attempt(base + i, a) for i in range(1, 50001)]
    stop = threading.Event()
    result = {}
    load = threading.Thread(
        target=lambda: result.setdefault("done", run_load(conf.http_port, attempts, THREADS, stop=stop)),
        daemon=True)
    load.start()

    users = conf.key("users", a)
    poll_until(lambda: redis("HLEN", users) >= 300, 60, "300 orders before the SIGTERM", interval=0.01)
    bound = int(conf.get("http.request-timeout-ms")) / 1000 + 2 + 5
    t0 = time.monotonic()
    gateway.terminate()
    rc = gateway.wait(bound + 10)
    elapsed = time.monotonic() - t0
    stop.set()
    load.join(60)
    assert not load.is_alive(), "the load did not stop"
    assert rc is not None, f"the gateway did not exit within {bound + 10:.0f}s of SIGTERM"
    gateway.record_exit()
    assert rc == 0, f"exit status {rc}; log:\n{gateway.log_tail()}"
    assert elapsed <= bound, f"the gateway took {elapsed:.1f}s to drain, bound {bound}s"

    done = result["done"]
    sent = [x for x in done if x.sent is not None]
    answered = [x for x in sent if x.reply is not None]
    dropped = [x for x in sent if x.error is not None and is_connection_error(x.error)]
    broken = [x for x in sent if x.error is not None and not is_connection_error(x.error)]
    ok = [x for x in answered if x.reply.code == 200]
    unavailable = [x for x in answered if x.reply.code == 503]
    print(f"\nexit after {elapsed:.2f}s; {len(sent)} sent: {len(ok)} accepted, "
          f"{len(unavailable)} 503, {len(dropped)} refused or dropped connections")
    assert not broken, describe_failures(broken)
    others = [x for x in answered if x.reply.code not in (200, 503)]
    assert not others, f"answers other than 200 and 503: {others[:5]}"
    for x in ok:
        assert x.reply["success"] is True and x.reply["status"] == "PROCESSING", repr(x)
    for x in unavailable:
        assert x.reply.status == "UNAVAILABLE", repr(x)
    assert len(ok) >= 300

    rows_count = wait_for_consumer(mysql, redis, conf, a, None, consumer, timeout=60)
    rows = order_rows(mysql, a)
    accepted = {x.reply["orderNo"]: x.user for x in ok}
    missing = set(accepted) - set(rows)
    assert not missing, f"{len(missing)} orders answered 200 are not in MySQL, e.g. {sorted(missing)[:5]}"
    assert all(rows[o] == u for o, u in accepted.items())
    # An order nobody was told about may only come from a request whose connection
    # dropped; a 503 promised that nothing was taken.
    extra = {o: u for o, u in rows.items() if o not in accepted}
    told_503 = {x.user for x in unavailable}
    assert not (set(extra.values()) & told_503), "an order was persisted for a user told 503"
    assert not extra, (f"{len(extra)} orders persisted whose request got no answer "
                       f"(reply lost in the shutdown), e.g. {list(extra.items())[:5]}")
    assert rows_count == success_count(redis, conf, a)
    stock_left = int(redis("GET", conf.key("stock", a)))
    assert stock_left + rows_count == STOCK, "I3: Redis stock + SUCCESS orders != initial stock"
