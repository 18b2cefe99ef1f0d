"""The Redis Cluster of the chaos suite's cluster scenarios (R1-R3 of test_chaos_cluster.py),
node by node: who serves a sale's slot and who replicates it, a node killed and started
again, a slot migrated key by key, and the check that the cluster is whole again.

Each node is reached on its own address (resp.Redis), never through the cluster client
the checks use: while a master is down, that client would wait for the new map too."""

import subprocess
import time

from resp import Redis, RedisError, key_slot


class Node:
    """One line of CLUSTER NODES."""

    def __init__(self, line):
        f = line.split()
        self.id = f[0]
        host, _, port = f[1].split("@")[0].rpartition(":")
        self.addr = (host, int(port))
        self.flags = set(f[2].split(","))
        self.master_id = None if f[3] == "-" else f[3]
        self.slots = f[8:]

    @property
    def port(self):
        return self.addr[1]

    @property
    def master(self):
        return "master" in self.flags

    @property
    def failing(self):
        return bool(self.flags & {"fail", "fail?", "noaddr"})

    def __repr__(self):
        return f"{self.addr[0]}:{self.port} ({'master' if self.master else 'replica'})"


class RedisCluster:
    """The nodes of redis.nodes, asked one by one."""

    def __init__(self, conf, stack):
        self.stack = stack
        self.replicas = int(conf.get("redis.cluster-replicas") or 2)
        self.addrs = [(h, int(p)) for h, _, p in
                      (a.strip().rpartition(":") for a in conf.get("redis.nodes").split(","))]
        self.conns = {}

    def client(self, addr):
        addr = tuple(addr)
        if addr not in self.conns:
            self.conns[addr] = Redis(addr[0], addr[1], timeout=2)
        return self.conns[addr]

    def ask_any(self, *args, skip=()):
        """The first node that answers (a dead one refuses at once)."""
        last = None
        for addr in self.addrs:
            if addr in skip:
                continue
            try:
                return self.client(addr)(*args)
            except (OSError, ConnectionError, RedisError) as e:
                last = e
        raise ConnectionError(f"no node of {self.addrs} answers {args[0]}: {last}")

    def nodes(self, skip=()):
        return [Node(line) for line in self.ask_any("CLUSTER", "NODES", skip=skip).splitlines() if line.strip()]

    def owner(self, slot, skip=()):
        """(host, port) of the master serving `slot` in the map of a live node, or None."""
        for first, last, master, *_ in self.ask_any("CLUSTER", "SLOTS", skip=skip):
            if int(first) <= slot <= int(last):
                return (master[0], int(master[1]))
        return None

    def node_at(self, addr, skip=()):
        return next(n for n in self.nodes(skip) if n.addr == tuple(addr))

    def replicas_of(self, master, skip=()):
        return [n for n in self.nodes(skip) if n.master_id == master.id and not n.failing]

    @staticmethod
    def slot(conf, activity):
        return key_slot(conf.key("stock", activity))

    def pidfile(self, node):
        """scripts/redis-cluster.sh keeps node P's files in redis-cluster/P/."""
        return f"redis-cluster/{node.port}/redis.pid"

    def kill9(self, node):
        return self.stack.kill9(self.pidfile(node))

    def start_missing(self):
        """scripts/redis-cluster.sh start: starts the nodes that are down and waits until
        every node says cluster_state:ok, all slots served, every replica's link up."""
        self.stack.sh("redis-cluster", "start", timeout=120)

    def role(self, addr):
        try:
            return self.client(addr)("ROLE")[0]
        except (OSError, ConnectionError, RedisError):
            return None

    def wait_owner(self, slot, addrs, timeout, skip=()):
        """Polls until a live node's map has one of `addrs` serving `slot`, as a master:
        (that address, the seconds it took)."""
        addrs = {tuple(a) for a in addrs}
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            try:
                owner = self.owner(slot, skip)
                if owner in addrs and self.role(owner) == "master":
                    return owner, time.monotonic() - t0
            except (OSError, ConnectionError, RedisError):
                pass
            time.sleep(0.02)
        raise AssertionError(f"slot {slot} not served by any of {sorted(addrs)} {timeout} s later")

    def wait_state_ok(self, timeout, skip=()):
        """Polls until every node but `skip` says cluster_state:ok; the seconds it took."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            try:
                if all("cluster_state:ok" in self.client(a)("CLUSTER", "INFO")
                       for a in self.addrs if a not in skip):
                    return time.monotonic() - t0
            except (OSError, ConnectionError, RedisError):
                pass
            time.sleep(0.05)
        raise AssertionError(f"cluster_state not ok on every node {timeout} s later")

    def cut_replication(self, master, replica, timeout=10):
        """The replica cut off from its master, as on a broken link: its link dropped, and
        every reconnect refused (a masterauth the master, which has no password, answers
        with an error), while the master goes on answering its clients. heal() lifts it.
        Returns the seconds until the replica saw its link down."""
        t0 = time.monotonic()
        self.client(replica.addr)("CONFIG", "SET", "masterauth", "chaos-cut")
        self.client(master.addr)("CLIENT", "KILL", "TYPE", "replica")
        while time.monotonic() - t0 < timeout:
            if "master_link_status:down" in self.client(replica.addr)("INFO", "replication"):
                return time.monotonic() - t0
            time.sleep(0.01)
        raise AssertionError(f"{replica} still linked to {master} {timeout} s after the cut")

    def heal(self, replica):
        self.client(replica.addr)("CONFIG", "SET", "masterauth", "")

    def replica_keys(self, replica, key):
        """HKEYS of `key` read on a replica (READONLY), with the replica's role after the
        read: its data frozen since its master died, as long as it is still a replica."""
        c = self.client(replica.addr)
        c("READONLY")
        keys = set(c("HKEYS", key) or [])
        return keys, self.role(replica.addr)

    def migrate_slot(self, slot, src, dst, pause, log=None):
        """Moves `slot` from master src to master dst as redis-cli --cluster reshard does
        (IMPORTING, MIGRATING, MIGRATE of every key, SETSLOT NODE on every master), one key
        at a time with `pause` seconds between keys, so that clients meet ASK (and the
        importing master's TRYAGAIN) under load for a while. Whatever happens, the slot
        ends owned by dst: a slot left half-moved would stall the next scenarios."""
        s, d = self.client(src.addr), self.client(dst.addr)
        moved = 0
        try:
            d("CLUSTER", "SETSLOT", slot, "IMPORTING", src.id)
            s("CLUSTER", "SETSLOT", slot, "MIGRATING", dst.id)
            while keys := s("CLUSTER", "GETKEYSINSLOT", slot, 1):
                s("MIGRATE", dst.addr[0], dst.addr[1], "", 0, 5000, "KEYS", *keys)
                moved += 1
                if log:
                    log(f"migrated {keys[0]} to {dst}")
                time.sleep(pause)
        finally:
            # The importer first, then the source (whose MOVED then names dst), then the others.
            d("CLUSTER", "SETSLOT", slot, "NODE", dst.id)
            s("CLUSTER", "SETSLOT", slot, "NODE", dst.id)
            for n in self.nodes():
                if n.master and not n.failing and n.id not in (src.id, dst.id):
                    self.client(n.addr)("CLUSTER", "SETSLOT", slot, "NODE", dst.id)
        return moved

    def health(self):
        """(ok, detail): every node of redis.nodes runs and says cluster_state:ok with all
        16384 slots served, every replica's link is up, no slot is open (migrating or
        importing), and redis-cli --cluster check agrees."""
        problems = []
        for addr in self.addrs:
            try:
                info = dict(line.split(":", 1) for line in self.client(addr)("CLUSTER", "INFO").split()
                            if ":" in line)
                if info.get("cluster_state") != "ok" or info.get("cluster_slots_ok") != "16384":
                    problems.append(f"{addr[1]}: {info.get('cluster_state')}, "
                                    f"{info.get('cluster_slots_ok')} slots ok")
                repl = self.client(addr)("INFO", "replication")
                if "role:slave" in repl and "master_link_status:up" not in repl:
                    problems.append(f"{addr[1]}: replica link down")
            except (OSError, ConnectionError, RedisError) as e:
                problems.append(f"{addr[1]}: {e}")
        nodes = self.nodes()
        open_slots = [s for n in nodes for s in n.slots if s.startswith("[")]
        if open_slots:
            problems.append(f"open slots {open_slots}")
        masters = sum(1 for n in nodes if n.master and not n.failing)
        if masters != len(self.addrs) // (self.replicas + 1):
            problems.append(f"{masters} masters")
        p = subprocess.run(["redis-cli", "--cluster", "check", f"{self.addrs[0][0]}:{self.addrs[0][1]}"],
                           capture_output=True, text=True, timeout=30)
        if p.returncode != 0 or "[ERR]" in p.stdout or "[WARNING]" in p.stdout:
            problems.append("redis-cli --cluster check: " + " | ".join(
                line for line in p.stdout.splitlines() if "[ERR]" in line or "[WARNING]" in line))
        layout = ", ".join(f"{n.port} {'master' if n.master else 'replica'}" for n in sorted(nodes, key=lambda n: n.port))
        return (not problems, "; ".join(problems) if problems else f"cluster_state:ok on all {len(self.addrs)} nodes, "
                f"16384 slots, no open slot, replicas in sync ({layout})")
