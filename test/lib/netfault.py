"""Network faults between the machines of the hosts topology (scripts/hosts.sh): each part
in a network namespace of its own, its address on bridge skbr0. Root only.

  Cut(ns, peers)      ns drops every packet from and to the peers' addresses (both ways,
                      silently: a connect hangs, an open connection stalls and resumes on
                      restore, as across a partition); peers None: everything but loopback,
                      the host cut off from all
  LinkDown(ns)        the outer end of ns's veth down: the whole host off the bridge
  Delay(ns, dests)    every new TCP connection from ns to those addresses goes through a
                      proxy inside ns (stallproxy.py, transparent) that holds each answer
                      back `seconds`, changeable while it runs; connections open before it
                      are not affected, so it goes in before the processes it slows start
  Redirect(ns, dests, port)  the rule alone: new TCP connections from ns to those addresses
                      go to 127.0.0.1:port in ns, but for those carrying MARK (a transparent
                      proxy's own); Delay's, and bench/latency.py's for bench/delayproxy.c

Each is a context manager and has apply()/restore(); restore is idempotent. The cuts are
nftables tables of their own inside the namespace (the kernel here has nf_tables and no
netem); clear(ns) removes every table this module made there.
"""

import itertools
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BRIDGE = "skbr0"
HOST_ADDR = "10.77.0.1"
PREFIX = "sk"           # the tables' names start with it; clear() removes only those
_ids = itertools.count(1)


def sh(*args, ns=None, check=True, input=None, timeout=20):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + [str(a) for a in args]
    p = subprocess.run(cmd, capture_output=True, text=True, input=input, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    return p


def nft(script, ns):
    return sh("nft", "-f", "-", ns=ns, input=script)


def namespaces(netns_map):
    """{namespace: address} of a netns.map (scripts/hosts.sh)."""
    out = {}
    for line in Path(netns_map).read_text().splitlines():
        words = line.split()
        if len(words) >= 2:
            out[words[1]] = words[0]
    return out


def clear(ns):
    """Removes every table of this module in ns (what a killed test left there)."""
    listing = sh("nft", "list", "tables", ns=ns, check=False).stdout
    for line in listing.splitlines():
        words = line.split()
        if len(words) == 3 and words[0] == "table" and words[2].startswith(PREFIX):
            sh("nft", "delete", "table", words[1], words[2], ns=ns, check=False)


class _Fault:
    def __enter__(self):
        self.apply()
        return self

    def __exit__(self, *exc):
        self.restore()


class Cut(_Fault):
    def __init__(self, ns, peers=None):
        self.ns = ns
        self.peers = None if peers is None else sorted(set(peers))
        self.table = f"{PREFIX}cut{os.getpid()}x{next(_ids)}"
        self.applied = False

    def apply(self):
        if self.peers is None:
            inn, out = 'iifname != "lo" drop', 'oifname != "lo" drop'
        else:
            addrs = ", ".join(self.peers)
            inn, out = f"ip saddr {{ {addrs} }} drop", f"ip daddr {{ {addrs} }} drop"
        # Priority -300, before conntrack (-200): an established connection's packets are
        # dropped like any other, not let through as part of a known flow.
        nft(f"""table inet {self.table} {{
  chain in {{ type filter hook prerouting priority -300; {inn}; }}
  chain out {{ type filter hook output priority -300; {out}; }}
}}
""", self.ns)
        self.applied = True
        return self

    def restore(self):
        if self.applied:
            sh("nft", "delete", "table", "inet", self.table, ns=self.ns, check=False)
            self.applied = False


class LinkDown(_Fault):
    def __init__(self, ns):
        self.ns = ns
        self.veth = "skv-" + ns.removeprefix("sk-")
        self.applied = False

    def apply(self):
        sh("ip", "link", "set", self.veth, "down")
        self.applied = True
        return self

    def restore(self):
        if self.applied:
            sh("ip", "link", "set", self.veth, "up")
            self.applied = False


class Redirect(_Fault):
    """New TCP connections from ns to dests go to the proxy on 127.0.0.1:port inside ns;
    the proxy's own connections carry `mark` and go out as they are."""

    MARK = 0x5C

    def __init__(self, ns, dests, port, mark=MARK):
        self.ns, self.dests, self.port, self.mark = ns, sorted(set(dests)), port, mark
        self.table = f"{PREFIX}delay{os.getpid()}x{next(_ids)}"
        self.applied = False

    def apply(self):
        addrs = ", ".join(self.dests)
        nft(f"""table ip {self.table} {{
  chain out {{ type nat hook output priority -100;
    meta mark != {self.mark} ip daddr {{ {addrs} }} meta l4proto tcp redirect to :{self.port}; }}
}}
""", self.ns)
        self.applied = True
        return self

    def restore(self):
        if self.applied:
            sh("nft", "delete", "table", "ip", self.table, ns=self.ns, check=False)
            self.applied = False


class Delay(_Fault):
    """dests: addresses; seconds: added to every answer coming back to ns from them."""

    MARK = Redirect.MARK

    def __init__(self, ns, dests, seconds=0.0):
        self.ns, self.dests, self.seconds = ns, sorted(set(dests)), seconds
        self.redirect = None
        self.proc = None

    def apply(self):
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, sys.executable, str(HERE / "stallproxy.py"),
             "--listen", "127.0.0.1:0", "--mark", hex(self.MARK), "--delay", str(self.seconds)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        if line[:1] != ["listening"]:
            self.proc.kill()
            raise RuntimeError(f"the delay proxy in {self.ns} did not start: {line}")
        self.port = int(line[1])
        self.redirect = Redirect(self.ns, self.dests, self.port, self.MARK).apply()
        return self

    def set(self, seconds):
        self._say(f"delay {seconds}")
        self.seconds = seconds

    def stall(self):
        self._say("stall")

    def resume(self):
        self._say("resume")

    def _say(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        if answer != f"ok {line}":
            raise RuntimeError(f"the delay proxy in {self.ns} answered {answer!r} to {line!r}")

    def restore(self):
        if self.redirect is not None:
            self.redirect.restore()
            self.redirect = None
        if self.proc is not None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


def tcp_probe(ns, addr, port, timeout=1.0):
    """From ns (None: this host) to addr:port: 'open' (accepted), 'refused' (a reset: the
    path works, nothing listens) or 'timeout' (nothing came back: cut)."""
    code = ("import socket,sys\n"
            "s=socket.socket(); s.settimeout(float(sys.argv[3]))\n"
            "try:\n s.connect((sys.argv[1], int(sys.argv[2]))); print('open')\n"
            "except ConnectionRefusedError: print('refused')\n"
            "except (socket.timeout, TimeoutError): print('timeout')\n"
            "except OSError as e: print('error', e)\n")
    p = sh(sys.executable, "-c", code, addr, port, timeout, ns=ns, check=False, timeout=timeout + 10)
    return p.stdout.strip() or f"error {p.stderr.strip()}"


_PING_RTT = """
import socket, statistics, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
ms = []
for _ in range(int(sys.argv[3])):
    t = time.perf_counter(); s.sendall(b"PING\\r\\n"); assert s.recv(64) == b"+PONG\\r\\n"
    ms.append((time.perf_counter() - t) * 1000)
print(statistics.median(ms))
"""


def ping_rtt_ms(ns, host, port, count=20):
    """The median round trip of `count` Redis PINGs on one new connection from ns to
    host:port, in ms: what a Delay or a delay proxy adds shows here."""
    p = sh(sys.executable, "-c", _PING_RTT, host, port, count, ns=ns, timeout=60)
    return float(p.stdout)
