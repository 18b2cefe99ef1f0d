"""log.format = json (issue 14 item 6): what a log shipper reads.

A gateway and a consumer with log.format = json go through a whole sale - start-up, orders
accepted and refused, batches persisted, SIGTERM - and every line either writes is one JSON
object with the time (ISO-8601 UTC, milliseconds), level, component and message; a line
about one order carries its number as the orderNo field. A gateway whose Kafka never
answers logs the failed delivery and the rollback of an order that way."""

import json
import re

import pytest

from sales import wait_for_consumer

from stack import Consumer, Gateway, free_port, poll_until, write_conf
from gatewayhttp import Api

CONF_OVERRIDES = {"log.format": "json"}

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
FIELDS = {"time", "level", "component", "message"}


def json_lines(service):
    """Every line of the service's log as an object; fails naming the first line that is
    not one JSON object with exactly the fields of a log line."""
    raw = service.log.read_bytes()
    text = raw.decode("utf-8")  # strict: a byte that is not UTF-8 fails here
    lines = text.splitlines()
    assert lines, f"{service.name} wrote no log lines"
    out = []
    for n, line in enumerate(lines, 1):
        try:
            obj = json.loads(line)
        except ValueError as e:
            pytest.fail(f"{service.log}:{n}: not JSON ({e}): {line!r}")
        assert isinstance(obj, dict), f"{service.log}:{n}: not an object: {line!r}"
        keys = set(obj)
        assert FIELDS <= keys <= FIELDS | {"orderNo"}, f"{service.log}:{n}: fields {sorted(keys)}"
        assert all(isinstance(v, str) for v in obj.values()), f"{service.log}:{n}: {line!r}"
        assert TIME.match(obj["time"]), f"{service.log}:{n}: time {obj['time']!r}"
        assert obj["level"] in ("debug", "info", "warn", "error"), f"{service.log}:{n}: {line!r}"
        assert obj["component"] == service.name, f"{service.log}:{n}: {line!r}"
        out.append(obj)
    return out


class JsonConsumer(Consumer):
    """Ready when its log has the JSON line whose message begins "ready"."""

    def is_ready(self):
        for line in self.log_text(since_start=True).splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and obj.get("message", "").startswith("ready"):
                return True
        return False


@pytest.fixture(scope="module")
def json_consumer(conf, logdir):
    c = JsonConsumer(conf, logdir)
    c.start()
    yield c
    c.finish()


def test_a_sale_logs_only_json_lines(conf, gateway, json_consumer, ctl, mysql, redis, ids):
    api = Api(gateway.base_url)
    stock = 20
    sale = ctl.create_sale(stock)
    users = [ids() for _ in range(stock + 10)]
    codes = [api.execute(u, sale.activity_id).code for u in users]
    assert codes.count(200) == stock, codes
    assert api.execute(users[0], sale.activity_id).code == 409  # the duplicate
    wait_for_consumer(mysql, redis, conf, sale.activity_id, expected_rows=stock, consumer=json_consumer)
    # The shutdown lines too: the drain and the consumer's summary.
    assert gateway.stop(timeout=int(conf.get("http.request-timeout-ms")) / 1000 + 20) == 0
    assert json_consumer.stop() == 0

    g = json_lines(gateway)
    c = json_lines(json_consumer)
    assert any(o["message"].startswith("listening on http://") for o in g), g
    assert any(o["message"] == "stopped" for o in g), g
    assert any(o["message"].startswith("ready (group ") for o in c), c
    assert any(o["message"].startswith("stopped after ") for o in c), c


class DeafKafkaGateway(Gateway):
    """Its broker never answers, so /healthz says 503 for good: ready once it answers."""

    def is_ready(self):
        try:
            Api(self.base_url).get("/healthz", timeout=2)
            return True
        except OSError:
            return False


def test_an_order_that_is_rolled_back_is_named_in_its_own_field(tmp_path, services, ctl, ids):
    sale = ctl.create_sale(3)
    g = DeafKafkaGateway(write_conf(tmp_path / "seckill.conf", {
        "log.format": "json",
        "kafka.brokers": f"127.0.0.1:{free_port()}",
        "kafka.producer.message.timeout.ms": "1000",
    }), tmp_path)
    g.start()
    try:
        api = Api(g.base_url)
        assert api.execute(ids(), sale.activity_id).code == 503
        poll_until(lambda: api.stock(sale.activity_id) == 3, 10, "the stock to come back")

        def rolled_back():
            return [o for o in json_lines(g) if o["message"] == "rolled back, stock returned"]
        lines = poll_until(rolled_back, 10, "the rollback's log line")
        order_no = lines[0].get("orderNo")
        assert order_no and re.fullmatch(rf"\d+-{sale.activity_id}", order_no), lines
        failed = [o for o in json_lines(g) if o.get("orderNo") == order_no
                  and o["message"].startswith("kafka delivery failed")]
        assert failed and failed[0]["level"] == "warn", json_lines(g)
    finally:
        g.finish(timeout=int(g.conf.get("http.request-timeout-ms")) / 1000 + 20)
