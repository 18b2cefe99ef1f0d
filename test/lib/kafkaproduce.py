"""Produces records to a topic of the tests' broker through librdkafka (ctypes), as a
redelivery or a late producer would: for tests of what the consumer does with an event it
gets again."""

import ctypes

RD_KAFKA_PRODUCER = 0
RD_KAFKA_PARTITION_UA = -1
RD_KAFKA_MSG_F_COPY = 2


def _rdkafka():
    lib = ctypes.CDLL("librdkafka.so.1")
    vp, cp = ctypes.c_void_p, ctypes.c_char_p
    for name, res, args in (
            ("rd_kafka_conf_new", vp, []),
            ("rd_kafka_conf_set", ctypes.c_int, [vp, cp, cp, cp, ctypes.c_size_t]),
            ("rd_kafka_new", vp, [ctypes.c_int, vp, cp, ctypes.c_size_t]),
            ("rd_kafka_topic_new", vp, [vp, cp, vp]),
            ("rd_kafka_produce", ctypes.c_int,
             [vp, ctypes.c_int32, ctypes.c_int, vp, ctypes.c_size_t, vp, ctypes.c_size_t, vp]),
            ("rd_kafka_flush", ctypes.c_int, [vp, ctypes.c_int]),
            ("rd_kafka_outq_len", ctypes.c_int, [vp]),
            ("rd_kafka_topic_destroy", None, [vp]),
            ("rd_kafka_destroy", None, [vp])):
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def produce(brokers, topic, values, timeout_ms=15000):
    """Produces each of values (bytes or str) to topic, acks=all, and waits until the broker
    has them all."""
    k = _rdkafka()
    conf = k.rd_kafka_conf_new()
    err = ctypes.create_string_buffer(512)
    for name, value in (("bootstrap.servers", brokers), ("acks", "all")):
        assert k.rd_kafka_conf_set(conf, name.encode(), value.encode(), err, 512) == 0, err.value
    rk = k.rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, 512)
    assert rk, err.value
    rkt = k.rd_kafka_topic_new(rk, topic.encode(), None)
    try:
        for v in values:
            data = v.encode() if isinstance(v, str) else v
            buf = ctypes.create_string_buffer(data, len(data))
            assert k.rd_kafka_produce(rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, buf, len(data),
                                      None, 0, None) == 0, f"produce to {topic} refused"
        k.rd_kafka_flush(rk, timeout_ms)
        assert k.rd_kafka_outq_len(rk) == 0, f"{topic}: records not acknowledged within {timeout_ms} ms"
    finally:
        k.rd_kafka_topic_destroy(rkt)
        k.rd_kafka_destroy(rk)
