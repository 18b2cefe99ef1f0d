"""The order consumer's GET /metrics (consumer.metrics-host:consumer.metrics-port): after a
sale is persisted it counts the batches and the rows, its histograms have observations,
the lag is back to 0, and the whole answer is Prometheus text. Another path is a JSON 404;
a port already taken stops start-up with an error naming the key."""

import re
import subprocess
import time

import pytest
import requests

from conftest import BIN, ROOT, child_env, poll_until, wait_for_consumer

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


def test_metrics_after_a_sale(conf, api, consumer, sale, mysql, redis):
    a = sale.activity_id
    base = int(time.time() * 1000) % 10**12 * 1000
    for i in range(1, ORDERS + 1):
        r = api.execute(base + i, a)
        assert r.code == 200, repr(r)
    wait_for_consumer(mysql, redis, conf, a, ORDERS, consumer)

    # The lag is measured after each pass of the consumer's loop: it reaches 0 once the
    # consumer has caught up (other modules' orders may still be replaying at start-up).
    state = {}

    def caught_up():
        state["samples"], state["types"] = scrape(conf)
        return state["samples"]["seckill_consumer_lag"] == 0

    poll_until(caught_up, 30, "seckill_consumer_lag 0 at quiescence")
    s, types = state["samples"], state["types"]

    assert types["seckill_consumer_batches_total"] == "counter"
    assert types["seckill_consumer_retries_total"] == "counter"
    assert types["seckill_consumer_lag"] == "gauge"
    # Rows newly inserted by this process: the sale's, and possibly orders other modules
    # left in the shared topic (the group id is the suite's, shared by every module).
    assert s["seckill_consumer_orders_persisted_total"] >= ORDERS
    assert s["seckill_consumer_batches_total"] >= 1
    assert s["seckill_consumer_ready"] == 1
    assert s["seckill_consumer_dead_letters_total"] >= 0
    assert 'seckill_consumer_retries_total{step="persist",backend="mysql"}' in s
    for name in ("seckill_consumer_batch_size", "seckill_consumer_insert_duration_seconds",
                 "seckill_consumer_batch_duration_seconds"):
        assert types[name] == "histogram"
        count, total = histogram(s, name)
        assert count >= 1, f"{name}: no observation"
        assert total > 0, f"{name}: _sum {total}"
    count, total = histogram(s, "seckill_consumer_batch_size")
    assert total >= ORDERS, f"batch sizes sum to {total}, fewer than the {ORDERS} orders"
    assert count == s["seckill_consumer_batches_total"]


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
