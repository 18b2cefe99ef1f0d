"""Order-number node ids are leases (field <id> of seckill:{nodes}, schema/lua/nodelease.lua), so two
live gateways never share one, however many gateways started before them.

Before leases a node id was INCR seckill:node-seq modulo 1,024: after 1,024 starts two live
gateways could hold the same id and make identical order numbers, and the consumer then
dropped one user's accepted order as a duplicate."""

import collections
import re

import pytest
from gatewayhttp import Api

from sales import order_rows

from stack import Gateway, poll_until, write_conf

NODE_SEQ = "seckill:{nodes}:seq"
LEASES = "seckill:{nodes}"
FOREIGN = "another-gateway:99999999999999"  # a token and an expiry far in the future
NODES = 1024
LEASE_MS = 3000  # renewed every second, so that the tests see a lost lease quickly
CONF_OVERRIDES = {"seckill.node-lease-ms": str(LEASE_MS)}


def node_of(order_no):
    """Order numbers are 41 bits of milliseconds, 10 of node and 12 of sequence."""
    return (int(order_no.split("-")[0]) >> 12) & (NODES - 1)


def node_in_log(gateway):
    found = re.findall(r"order-number node id (\d+) \(leased", gateway.log_text(since_start=True))
    assert found, gateway.log_tail()
    return int(found[-1])


def test_gateways_never_share_a_node_id_across_the_counter_wrap(gateway_with, consumer, ctl, redis, mysql, ids):
    first = gateway_with(CONF_OVERRIDES)
    a = node_in_log(first)
    assert redis("HGET", LEASES, str(a)).split(":")[0] != "another-gateway"
    # The next draw lands on a's id again (modulo 1,024), as after 1,023 more starts.
    redis("SET", NODE_SEQ, str(a + NODES - 1))
    second = gateway_with(CONF_OVERRIDES)
    b = node_in_log(second)
    assert b != a

    sale = ctl.create_sale(stock=40)
    apis = [Api(first.base_url), Api(second.base_url)]
    accepted = []
    for i in range(60):
        r = apis[i % 2].execute(ids(), sale.activity_id)
        assert r.code in (200, 409), (r.code, r.text)
        if r.code == 200:
            accepted.append(r.json["orderNo"])
    assert len(accepted) == 40 and len(set(accepted)) == 40
    assert collections.Counter(node_of(o) for o in accepted) == {a: 20, b: 20}
    # Every accepted order reaches MariaDB: none was dropped as a duplicate of another.
    poll_until(lambda: len(order_rows(mysql, sale.activity_id)) == 40, 60, "40 orders in MariaDB")
    assert sorted(order_rows(mysql, sale.activity_id)) == sorted(accepted)


def test_a_gateway_without_a_lease_sells_nothing_until_it_has_one_again(gateway_with, ctl, redis, ids):
    g = gateway_with(CONF_OVERRIDES)
    api = Api(g.base_url)
    a = node_in_log(g)
    sale = ctl.create_sale(stock=100)
    assert api.execute(ids(), sale.activity_id).code == 200
    free = (a + 512) % NODES
    try:
        # Every id held by someone else, this gateway's own included.
        for node in range(NODES):
            redis("HSET", LEASES, str(node), FOREIGN)
        poll_until(lambda: api.execute(ids(), sale.activity_id).code == 503, 10,
                   "execute to answer 503 once the lease is lost")
        r = api.execute(ids(), sale.activity_id)
        assert r.code == 503 and r.json["status"] == "UNAVAILABLE", r.text
        assert "another gateway holds it now" in g.log_text(since_start=True)
        # One id comes free: the gateway takes it and sells again, with that id.
        redis("HDEL", LEASES, str(free))
        poll_until(lambda: api.execute(ids(), sale.activity_id).code == 200, 10,
                   "execute to answer 200 with a new lease")
        r = api.execute(ids(), sale.activity_id)
        assert r.code == 200 and node_of(r.json["orderNo"]) == free, r.text
        assert redis("HGET", LEASES, str(free)) not in (None, FOREIGN)
    finally:
        for node in range(NODES):
            if redis("HGET", LEASES, str(node)) == FOREIGN:
                redis("HDEL", LEASES, str(node))


def test_sigterm_gives_the_id_back(gateway_with, redis):
    g = gateway_with(CONF_OVERRIDES)
    a = node_in_log(g)
    assert redis("HEXISTS", LEASES, str(a)) == 1
    assert g.stop() == 0
    assert redis("HEXISTS", LEASES, str(a)) == 0


def test_a_lease_redis_lost_is_not_written_back_by_its_holder(gateway_with, ctl, redis, ids):
    """Redis loses a gateway's lease (a failover or a restart that lost the write): another
    gateway may take that id meanwhile, so the holder's next renewal must not write it back
    as its own; it takes another id, and sells on with it."""
    g = gateway_with(CONF_OVERRIDES)
    a = node_in_log(g)
    token = redis("HGET", LEASES, str(a)).split(":")[0]
    assert redis("HDEL", LEASES, str(a)) == 1
    poll_until(lambda: node_in_log(g) != a, LEASE_MS / 1000 * 3, "the gateway to take another node id")
    assert "or Redis lost it" in g.log_text(since_start=True)
    held = redis("HGET", LEASES, str(a))
    assert held is None or not held.startswith(token + ":"), held
    sale = ctl.create_sale(stock=5)
    r = poll_until(lambda: (lambda x: x if x.code == 200 else None)(Api(g.base_url).execute(ids(), sale.activity_id)),
                   10, "an order accepted with the new id")
    assert node_of(r["orderNo"]) == node_in_log(g) != a


class Listening(Gateway):
    """Ready once it listens: pointed at a Redis that is not a cluster, it never loads a
    slot map, but its lease settings are judged at start."""

    def is_ready(self):
        return "listening on" in self.log_text(since_start=True)


FAILOVER_WARNING = "every sale would answer 503 meanwhile"


@pytest.mark.parametrize("lease_ms, warned", [(7000, True), (7600, False)])
def test_a_lease_shorter_than_a_failover_is_warned_of_at_start(tmp_path, base_conf, lease_ms, warned):
    """Two thirds of the lease, less its margin, against cluster-node-timeout (2 s) plus 2 s
    of election: 7000 lasts 3,967 ms without a renew, 7600 lasts 4,307 ms."""
    redis_addr = f"{base_conf.get('redis.host')}:{base_conf.get('redis.port')}"
    g = Listening(write_conf(tmp_path / "seckill.conf", {"seckill.node-lease-ms": str(lease_ms),
                                                          "redis.nodes": redis_addr,
                                                          "redis.cluster-node-timeout-ms": "2000"}), tmp_path)
    g.start()
    try:
        assert (FAILOVER_WARNING in g.log_text(since_start=True)) == warned, g.log_tail()
    finally:
        g.finish()
