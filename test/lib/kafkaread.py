"""Reads a topic of the tests' broker through librdkafka (ctypes), from each partition's low
to its high watermark, as a downstream reader would: for tests of what the processes
publish (dead letters, outcome events). No group, no commit."""

import collections
import ctypes
import json
import time

Record = collections.namedtuple("Record", "value key partition offset headers")


class _Message(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("rkt", ctypes.c_void_p), ("partition", ctypes.c_int32),
                ("payload", ctypes.c_void_p), ("len", ctypes.c_size_t),
                ("key", ctypes.c_void_p), ("key_len", ctypes.c_size_t),
                ("offset", ctypes.c_int64), ("_private", ctypes.c_void_p)]


def _rdkafka():
    lib = ctypes.CDLL("librdkafka.so.1")
    vp, cp, i32, i64 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_int64
    for name, res, args in (
            ("rd_kafka_conf_new", vp, []),
            ("rd_kafka_conf_set", ctypes.c_int, [vp, cp, cp, cp, ctypes.c_size_t]),
            ("rd_kafka_new", vp, [ctypes.c_int, vp, cp, ctypes.c_size_t]),
            ("rd_kafka_query_watermark_offsets", ctypes.c_int,
             [vp, cp, i32, ctypes.POINTER(i64), ctypes.POINTER(i64), ctypes.c_int]),
            ("rd_kafka_topic_partition_list_new", vp, [ctypes.c_int]),
            ("rd_kafka_topic_partition_list_add", vp, [vp, cp, i32]),
            ("rd_kafka_topic_partition_list_set_offset", ctypes.c_int, [vp, cp, i32, i64]),
            ("rd_kafka_topic_partition_list_destroy", None, [vp]),
            ("rd_kafka_assign", ctypes.c_int, [vp, vp]),
            ("rd_kafka_consumer_poll", ctypes.POINTER(_Message), [vp, ctypes.c_int]),
            ("rd_kafka_message_headers", ctypes.c_int, [ctypes.POINTER(_Message), ctypes.POINTER(vp)]),
            ("rd_kafka_header_get_last", ctypes.c_int,
             [vp, cp, ctypes.POINTER(vp), ctypes.POINTER(ctypes.c_size_t)]),
            ("rd_kafka_message_destroy", None, [ctypes.POINTER(_Message)]),
            ("rd_kafka_consumer_close", ctypes.c_int, [vp]),
            ("rd_kafka_destroy", None, [vp])):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def _headers(k, m, names):
    out = {}
    hdrs = ctypes.c_void_p()
    if names and k.rd_kafka_message_headers(m, ctypes.byref(hdrs)) == 0:
        for h in names:
            v, n = ctypes.c_void_p(), ctypes.c_size_t()
            if k.rd_kafka_header_get_last(hdrs, h.encode(), ctypes.byref(v), ctypes.byref(n)) == 0:
                out[h] = ctypes.string_at(v, n.value).decode()
    return out


def read(brokers, topic, header_names=(), timeout_s=20):
    """Every record of `topic` as [Record], partition by partition in offset order; the
    headers named in header_names are in Record.headers."""
    k = _rdkafka()
    conf = k.rd_kafka_conf_new()
    err = ctypes.create_string_buffer(512)
    for name, value in (("bootstrap.servers", brokers), ("group.id", "seckill-test-reader"),
                        ("enable.auto.commit", "false")):
        assert k.rd_kafka_conf_set(conf, name.encode(), value.encode(), err, 512) == 0, err.value
    rk = k.rd_kafka_new(1, conf, err, 512)   # RD_KAFKA_CONSUMER
    assert rk, err.value
    try:
        want = {}
        parts = k.rd_kafka_topic_partition_list_new(8)
        p = 0
        while True:
            lo, hi = ctypes.c_int64(), ctypes.c_int64()
            if k.rd_kafka_query_watermark_offsets(rk, topic.encode(), p, ctypes.byref(lo),
                                                  ctypes.byref(hi), 5000) != 0:
                break
            if hi.value > lo.value:
                want[p] = hi.value - 1
                k.rd_kafka_topic_partition_list_add(parts, topic.encode(), p)
                k.rd_kafka_topic_partition_list_set_offset(parts, topic.encode(), p, lo.value)
            p += 1
        assert p > 0, f"topic {topic} has no partition"
        assert k.rd_kafka_assign(rk, parts) == 0
        k.rd_kafka_topic_partition_list_destroy(parts)
        out, done = [], {}
        deadline = time.monotonic() + timeout_s
        while any(done.get(q, -1) < last for q, last in want.items()):
            assert time.monotonic() < deadline, f"{topic}: read up to {done}, high watermarks {want}"
            m = k.rd_kafka_consumer_poll(rk, 200)
            if not m:
                continue
            msg = m.contents
            if msg.err == 0:
                value = ctypes.string_at(msg.payload, msg.len) if msg.payload else b""
                key = ctypes.string_at(msg.key, msg.key_len) if msg.key else b""
                out.append(Record(value, key, msg.partition, msg.offset, _headers(k, m, header_names)))
                done[msg.partition] = msg.offset
            k.rd_kafka_message_destroy(m)
        k.rd_kafka_consumer_close(rk)
        out.sort(key=lambda r: (r.partition, r.offset))
        return out
    finally:
        k.rd_kafka_destroy(rk)


def outcome_events(conf, pick):
    """The events of the configuration's kafka.outcome-topic (docs/events.md) for which
    pick(event) holds, as [(key, event)], each partition in offset order."""
    out = []
    for r in read(conf.get("kafka.brokers"), conf.get("kafka.outcome-topic")):
        ev = json.loads(r.value)
        if pick(ev):
            out.append((r.key.decode(), ev))
    return out
