"""The order consumer's GET /metrics (consumer.metrics-host:consumer.metrics-port): across
a sale its counters move by exactly the sale's rows, no retry, rejection or dead letter;
every batch is observed once by each histogram, whose batch sizes add up to the sale; the
lag is back to 0, and the whole answer is Prometheus text. Another path is a JSON 404;
a port already taken stops start-up with an error naming the key."""

import re
import subprocess
import time

import pytest
import requests

from sales import wait_for_consumer

from stack import BIN, ROOT, child_env, poll_until

ORDERS = 40

# name{label="value",...} value: the sample lines of the text exposition format 0.0.4.
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"'
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:' + LABEL + r')(?:,' + LABEL + r')*\})? '
                    r'(-?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\+Inf|-Inf|NaN))$')


def metrics_url(conf, path="/metrics"):
    return f"http://127.0.0.1:{conf.get('consumer.metrics-port')}{path}"


def scrape(conf):
    """GET /metrics, parsed: {series: value}, series being the line up to the value. Fails
    on any line that is not a comment or a sample, and on a family without one TYPE."""
    r = requests.get(metrics_url(conf), timeout=10)
    assert r.status_code == 200, f"{r.status_code} {r.text[:300]}"
    assert r.headers["Content-Type"] == "text/plain; version=0.0.4"
    samples, types = {}, {}
    for line in r.text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            assert name not in types, f"two TYPE lines for {name}"
            types[name] = kind
            continue
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a Prometheus sample line: {line!r}"
        name = m.group(1)
        family = re.sub(r"_(bucket|sum|count)$", "", name) if name not in types else name
        assert family in types, f"{name}: no TYPE line before it"
        series = name + (m.group(2) or "")
        assert series not in samples, f"{series} appears twice"
        samples[series] = float(m.group(3))
    return samples, types


def histogram(samples, name):
    buckets = [(k, v) for k, v in samples.items() if k.startswith(name + "_bucket{")]
    assert buckets and buckets[-1][0].endswith('le="+Inf"}'), f"{name}: no +Inf bucket"
    values = [v for _, v in buckets]
    assert values == sorted(values), f"{name}: buckets not cumulative: {buckets}"
    assert values[-1] == samples[name + "_count"], f"{name}: +Inf bucket differs from _count"
    return samples[name + "_count"], samples[name + "_sum"]


@pytest.fixture(scope="module")
def sale(ctl, gateway, consumer):
    return ctl.create_sale(ORDERS)


RETRIES = [f'seckill_consumer_retries_total{{step="{step}",backend="{backend}"}}'
           for step, backend in (("dead-letter", "kafka"), ("claim", "redis"), ("persist", "mysql"),
                                 ("publish", "redis"), ("finalize", "redis"))]
HISTOGRAMS = ("seckill_consumer_batch_size", "seckill_consumer_insert_duration_seconds",
              "seckill_consumer_batch_duration_seconds")


def quiet_scrape(conf, what, done=lambda s: True):
    """A scrape once the consumer has caught up (lag 0) and its batch count stood still
    between two scrapes, and `done(samples)` holds: no batch is between its offset commit
    and its counters."""
    state = {"last": None}

    def settled():
        samples, types = scrape(conf)
        last, state["last"] = state["last"], samples
        if samples["seckill_consumer_lag"] != 0 or not done(samples) or last is None:
            return None
        if last["seckill_consumer_batches_total"] != samples["seckill_consumer_batches_total"]:
            return None
        return samples, types

    return poll_until(settled, 30, what)


def test_metrics_after_a_sale(conf, api, ctl, consumer, sale, mysql, redis):
    base = int(time.time() * 1000) % 10**12 * 1000
    # One order of another sale first: once it is in MySQL the consumer has its partitions
    # and whatever other modules left in the shared topic (the group id is the suite's) is
    # behind it, so the counters below move by this sale's orders alone.
    sentinel = ctl.create_sale(1).activity_id
    r = api.execute(base, sentinel)
    assert r.code == 200, repr(r)
    wait_for_consumer(mysql, redis, conf, sentinel, 1, consumer)
    before, _ = quiet_scrape(conf, "the consumer to settle before the sale")

    a = sale.activity_id
    for i in range(1, ORDERS + 1):
        r = api.execute(base + i, a)
        assert r.code == 200, repr(r)
    wait_for_consumer(mysql, redis, conf, a, ORDERS, consumer)
    persisted = "seckill_consumer_orders_persisted_total"
    s, types = quiet_scrape(conf, f"{ORDERS} more orders persisted and seckill_consumer_lag 0",
                            lambda s: s[persisted] - before[persisted] >= ORDERS)

    def delta(series):
        return s[series] - before[series]

    assert types["seckill_consumer_batches_total"] == "counter"
    assert types["seckill_consumer_retries_total"] == "counter"
    assert types["seckill_consumer_lag"] == "gauge"
    assert s["seckill_consumer_ready"] == 1
    assert delta(persisted) == ORDERS
    assert delta("seckill_consumer_orders_rejected_total") == 0
    assert delta("seckill_consumer_dead_letters_total") == 0
    assert delta("seckill_consumer_coupon_uses_persisted_total") == 0
    for series in RETRIES:
        assert delta(series) == 0, f"{series}: {delta(series)} retries in a healthy sale"
    batches = delta("seckill_consumer_batches_total")
    assert 1 <= batches <= ORDERS, f"{batches} batches for {ORDERS} orders"
    # Each batch observes its size and its duration once, and (every batch holding an
    # order here) one MySQL transaction.
    for name in HISTOGRAMS:
        assert types[name] == "histogram"
        count, total = histogram(s, name)
        count0, total0 = histogram(before, name)
        assert count - count0 == batches, f"{name}: {count - count0} observations, {batches} batches"
        assert total > total0, f"{name}: _sum did not grow ({total0} -> {total})"
    count, total = histogram(s, "seckill_consumer_batch_size")
    count0, total0 = histogram(before, "seckill_consumer_batch_size")
    assert total - total0 == ORDERS, f"batch sizes sum to {total - total0}, not the {ORDERS} orders"


def test_other_paths_are_404(conf, consumer):
    for path in ("/", "/metricsx", "/healthz"):
        r = requests.get(metrics_url(conf, path), timeout=10)
        assert r.status_code == 404, f"{path}: {r.status_code}"
        assert r.headers["Content-Type"] == "application/json"
        assert r.json()["success"] is False


def test_port_taken_stops_start_up(conf, consumer):
    """A second consumer with the same configuration cannot bind the port: it exits at
    once, before joining the group, with an error that names the key."""
    p = subprocess.run([str(BIN / "order-consumer"), "-c", str(conf.path)], cwd=ROOT,
                       env=child_env(), capture_output=True, text=True, timeout=60)
    out = p.stdout + p.stderr
    assert p.returncode == 1, f"rc {p.returncode}: {out[-500:]}"
    assert "consumer.metrics-port" in out, out[-500:]
    assert consumer.running
