"""The one RESP2 client of the Python side: the integration suite, the chaos suite and the
benchmark read and write Redis through it (GET, HGETALL, ZCARD, SCAN and friends).

One connection, one command at a time; a lock lets threads share it. A connection that
broke (Redis restarted, a chaos scenario killed it) is opened again and the command sent
once more. Bulk strings come back as str, integers as int, nil as None, arrays as lists;
an error reply raises RedisError.
"""

import socket
import threading


class RedisError(Exception):
    """An error reply, or an answer that is not RESP2."""


class Redis:
    def __init__(self, host, port, timeout=10):
        self.addr = (host, int(port))
        self.timeout = timeout
        self.lock = threading.Lock()
        self.sock = None
        self.file = None

    def nodes(self):
        """The connections that together hold every key: this one."""
        return [self]

    def each_master(self, *args):
        return [(self.addr, self(*args))]

    def _connect(self):
        self.close()
        self.sock = socket.create_connection(self.addr, timeout=self.timeout)
        self.file = self.sock.makefile("rb")

    def close(self):
        if self.file:
            self.file.close()
        if self.sock:
            self.sock.close()
        self.sock = self.file = None

    def _read(self):
        line = self.file.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            return self.file.read(n + 2)[:-2].decode()
        if kind == b"*":
            n = int(rest)
            if n < 0:
                return None
            return [self._read() for _ in range(n)]
        raise RedisError(f"unexpected reply {line!r}")

    @staticmethod
    def _encode(args):
        parts = [f"*{len(args)}\r\n".encode()]
        for a in args:
            b = str(a).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
        return b"".join(parts)

    def unlink(self, keys, batch=1000):
        """UNLINK of each key, pipelined `batch` at a time; the number that existed. One
        command per key, so that keys of many slots may go to one cluster node."""
        keys = list(keys)
        gone = 0
        with self.lock:
            try:
                if self.sock is None:
                    self._connect()
                for i in range(0, len(keys), batch):
                    chunk = keys[i:i + batch]
                    self.sock.sendall(b"".join(self._encode(("UNLINK", k)) for k in chunk))
                    gone += sum(self._read() for _ in chunk)
            except (OSError, ConnectionError, RedisError):
                # Replies of the batch may still be unread: the next command would read one.
                self.close()
                raise
        return gone

    def __call__(self, *args):
        payload = self._encode(args)
        with self.lock:
            for attempt in (0, 1):
                try:
                    if self.sock is None:
                        self._connect()
                    self.sock.sendall(payload)
                    return self._read()
                except (OSError, ConnectionError):
                    self.close()
                    if attempt:
                        raise


# ---- Redis Cluster (redis.nodes) --------------------------------------------------------------


def key_slot(key):
    """The cluster slot of a key: CRC16-XMODEM of its hash tag (the part between the first
    '{' and the next '}', when not empty) or of the whole key, mod 16384."""
    k = str(key).encode()
    start = k.find(b"{")
    if start >= 0:
        end = k.find(b"}", start + 1)
        if end > start + 1:
            k = k[start + 1:end]
    crc = 0
    for byte in k:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc % 16384


# Commands of the Python side that name no key: any master answers them (INFO, CONFIG and
# SCAN speak of that one node only; each_master reaches them all).
_KEYLESS = {"PING", "INFO", "CONFIG", "SCAN", "CLUSTER", "DBSIZE", "TIME", "SCRIPT"}


class ClusterRedis:
    """The same interface as Redis for a Redis Cluster: a command goes to the master of its
    first key's slot (the slot map from CLUSTER SLOTS); MOVED reloads the map and sends it
    again, ASK sends it once to the node named, behind ASKING. Keys of one activity share
    a hash tag, so every command of the suites touches one slot."""

    def __init__(self, nodes, timeout=10):
        self.seeds = [(h, int(p)) for h, _, p in (n.strip().rpartition(":") for n in nodes.split(","))]
        self.timeout = timeout
        self.addr = self.seeds[0]
        self.conns = {}
        self.slots = []           # (first, last, (host, port))
        self.lock = threading.Lock()

    def _conn(self, addr):
        if addr not in self.conns:
            self.conns[addr] = Redis(addr[0], addr[1], timeout=self.timeout)
        return self.conns[addr]

    def _load_map(self):
        last = None
        for addr in list(self.slots and {a for _, _, a in self.slots}) + self.seeds:
            try:
                reply = self._conn(addr)("CLUSTER", "SLOTS")
                self.slots = [(int(r[0]), int(r[1]), (r[2][0], int(r[2][1]))) for r in reply]
                return
            except (OSError, ConnectionError, RedisError) as e:
                last = e
        raise ConnectionError(f"no node of the cluster answers CLUSTER SLOTS: {last}")

    def _master(self, slot):
        if not self.slots:
            self._load_map()
        for first, last, addr in self.slots:
            if first <= slot <= last:
                return addr
        raise RedisError(f"CLUSTERDOWN slot {slot} is not served")

    def masters(self):
        with self.lock:
            return self._masters()

    def each_master(self, *args):
        """The command on every master: [(address, reply)]."""
        return [(addr, self._conn(addr)(*args)) for addr in self.masters()]

    def nodes(self):
        """A connection to each master: SCAN on each of them sees every key."""
        return [self._conn(addr) for addr in self.masters()]

    def __call__(self, *args):
        keyless = str(args[0]).upper() in _KEYLESS or len(args) < 2
        with self.lock:
            addr = self._masters()[0] if keyless else self._master(key_slot(args[1]))
            for _ in range(5):
                try:
                    return self._conn(addr)(*args)
                except RedisError as e:
                    words = str(e).split()
                    if words[0] not in ("MOVED", "ASK"):
                        raise
                    host, _, port = words[2].rpartition(":")
                    target = (host, int(port))
                    if words[0] == "ASK":
                        c = self._conn(target)
                        c("ASKING")
                        return c(*args)
                    self._load_map()
                    addr = target
                except (OSError, ConnectionError):
                    # A master that went away: its replica may have taken over.
                    self._load_map()
                    addr = self._masters()[0] if keyless else self._master(key_slot(args[1]))
            raise RedisError(f"too many redirects for {args[0]}")

    def unlink(self, keys, batch=1000):
        """UNLINK of each key on the master of its slot, pipelined per master; the number
        that existed. A key whose slot moved meanwhile is left (MOVED is not followed)."""
        by_master = {}
        with self.lock:
            for k in keys:
                by_master.setdefault(self._master(key_slot(k)), []).append(k)
        gone = 0
        for addr, ks in by_master.items():
            try:
                gone += self._conn(addr).unlink(ks, batch)
            except RedisError:
                pass  # that master's keys moved; the others still go
        return gone

    def _masters(self):
        if not self.slots:
            self._load_map()
        return sorted({a for _, _, a in self.slots})

    def close(self):
        for c in self.conns.values():
            c.close()


def redis_client(conf, timeout=10):
    """The client for a configuration: ClusterRedis when redis.nodes is set, else Redis."""
    nodes = conf.get("redis.nodes")
    if nodes:
        return ClusterRedis(nodes, timeout=timeout)
    return Redis(conf.get("redis.host"), conf.get("redis.port"), timeout=timeout)
