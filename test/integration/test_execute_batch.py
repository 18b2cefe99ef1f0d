"""Execute requests that reach the gateway in one pass of its event loop share one
execute.lua call, and every one of them gets the answer it would have had alone
(docs/protocol.md, "Coalesced execute calls").

To put many requests into one pass on purpose, the gateway is stopped (SIGSTOP), one
request is written on each of N open connections, and the gateway is continued: its next
epoll_wait reports all N sockets at once. N stays under libevent's first epoll batch (32
events), so they are read in that one pass."""

import os
import signal
import socket

from gatewayhttp import gateway_metrics, http_bytes, read_raw_reply

BURST = 24


def open_connections(gw, n):
    """n keep-alive connections the gateway has already accepted and served once."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", gw.conf.http_port), timeout=20)
        s.sendall(http_bytes("GET", "/healthz"))
        assert read_raw_reply(s).code == 200
        socks.append(s)
    return socks


def burst(gw, activity, users):
    """One execute per user, all written while the gateway is stopped; the replies in the
    order of users, and the gateway's batch-size histogram (calls, requests) it took."""
    socks = open_connections(gw, len(users))
    try:
        before = gateway_metrics(gw.conf.http_port)
        os.kill(gw.pid, signal.SIGSTOP)
        try:
            for s, user in zip(socks, users):
                s.sendall(http_bytes("POST", f"/seckill/execute?userId={user}&activityId={activity}"))
        finally:
            os.kill(gw.pid, signal.SIGCONT)
        replies = [read_raw_reply(s, "POST").reply() for s in socks]
        after = gateway_metrics(gw.conf.http_port)
    finally:
        for s in socks:
            s.close()
    calls = after["seckill_execute_batch_size_count"] - before["seckill_execute_batch_size_count"]
    carried = after["seckill_execute_batch_size_sum"] - before["seckill_execute_batch_size_sum"]
    return replies, calls, carried, {k: after[k] - before.get(k, 0) for k in after
                                     if k.startswith("seckill_execute_batch_size_bucket")}


def test_one_pass_is_one_call_with_every_answer_its_own(gateway_with, ctl, redis, conf, ids):
    gw = gateway_with({})
    stock = 15
    # On a busy machine a socket's bytes now and then come up in the pass after the
    # others; every burst must be answered right, and at least one of three must go to
    # Redis as one call (without coalescing none would).
    shapes = []
    for _ in range(3):
        sale = ctl.create_sale(stock)
        distinct = [ids() for _ in range(BURST - 4)]
        users = distinct + distinct[:4]          # four users twice in the same call
        replies, calls, carried, _ = burst(gw, sale.activity_id, users)
        assert carried == BURST
        check_burst_answers(redis, conf, sale, stock, users, replies)
        shapes.append(calls)
        if calls == 1:
            break
    assert 1 in shapes, f"no burst went to Redis as one call: calls per burst {shapes}"


def check_burst_answers(redis, conf, sale, stock, users, replies):
    ok = {}
    for user, r in zip(users, replies):
        assert r.code in (200, 409), repr(r)
        if r.code == 200:
            assert user not in ok, f"user {user} was sold twice in one call"
            ok[user] = r["orderNo"]
    assert len(ok) == stock
    for user, r in zip(users, replies):
        if r.code == 409 and user in ok:
            # the other attempt of a winner: DUPLICATE with the winner's order number
            assert (r.status, r["orderNo"]) == ("DUPLICATE", ok[user]), repr(r)
        elif r.code == 409:
            assert r.status == "OUT_OF_STOCK", repr(r)
    assert redis("GET", conf.key("stock", sale.activity_id)) == "0"
    assert redis("HLEN", conf.key("users", sale.activity_id)) == stock


def test_batch_max_splits_a_pass_into_calls(gateway_with, ctl, redis, conf, ids):
    batch_max = 10  # a bound of the histogram's buckets
    gw = gateway_with({"seckill.execute-batch-max": batch_max})
    sale = ctl.create_sale(100)
    users = [ids() for _ in range(BURST)]
    replies, calls, carried, buckets = burst(gw, sale.activity_id, users)

    # Every call carried at most batch_max: 24 requests take 3 calls or more (more when a
    # socket's bytes came up a pass later, on a busy machine).
    assert carried == BURST and calls >= -(-BURST // batch_max), (calls, carried)
    assert buckets[f'seckill_execute_batch_size_bucket{{le="{batch_max}"}}'] == calls, buckets
    assert [r.code for r in replies] == [200] * BURST, [repr(r) for r in replies if r.code != 200]
    assert len({r["orderNo"] for r in replies}) == BURST
    assert redis("GET", conf.key("stock", sale.activity_id)) == str(100 - BURST)


def test_batch_of_one_when_requests_come_one_by_one(gateway_with, ctl, ids):
    gw = gateway_with({})
    sale = ctl.create_sale(10)
    port = gw.conf.http_port
    before = gateway_metrics(port)
    s = open_connections(gw, 1)[0]
    try:
        for _ in range(5):
            s.sendall(http_bytes("POST", f"/seckill/execute?userId={ids()}&activityId={sale.activity_id}"))
            assert read_raw_reply(s, "POST").code == 200
    finally:
        s.close()
    after = gateway_metrics(port)
    assert after["seckill_execute_batch_size_count"] - before["seckill_execute_batch_size_count"] == 5
    assert after["seckill_execute_batch_size_sum"] - before["seckill_execute_batch_size_sum"] == 5
