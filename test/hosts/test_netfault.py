"""netfault (test/lib/netfault.py), the groundwork of the partition and latency scenarios:
a cut drops traffic both ways between a namespace and the peers named, and only those;
a whole-host cut and a veth set down take a namespace off the bridge; restore brings the
path back, and an open connection stalled by a cut goes on where it stopped; the delay
proxy adds its latency to new connections and can change it while it runs.
Probes go to port 9, where nothing listens: a reset proves the path, silence a cut."""

import socket
import subprocess
import time

import netfault
from netfault import Cut, Delay, LinkDown, Redirect, tcp_probe

CLOSED = 9


def probe_until(ns, addr, want, timeout=10):
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        got = tcp_probe(ns, addr, CLOSED, timeout=0.5)
        if got == want:
            return got
    return got


def test_cut_drops_both_ways_between_the_namespace_and_its_peers_only(topology):
    client, gw1, gw2 = (topology.addr(n) for n in ("sk-client", "sk-gw1", "sk-gw2"))
    assert tcp_probe("sk-client", gw1, CLOSED) == "refused"
    with Cut("sk-client", [gw1]):
        assert tcp_probe("sk-client", gw1, CLOSED) == "timeout"
        assert tcp_probe("sk-gw1", client, CLOSED) == "timeout"
        # The others still reach it, and it them.
        assert tcp_probe("sk-client", gw2, CLOSED) == "refused"
        assert tcp_probe("sk-gw2", client, CLOSED) == "refused"
        assert tcp_probe(None, client, CLOSED) == "refused"
    assert tcp_probe("sk-client", gw1, CLOSED) == "refused"
    assert tcp_probe("sk-gw1", client, CLOSED) == "refused"


def test_whole_host_cut_keeps_only_loopback(topology):
    client, gw1 = topology.addr("sk-client"), topology.addr("sk-gw1")
    cut = Cut("sk-client").apply()
    try:
        assert tcp_probe("sk-client", gw1, CLOSED) == "timeout"
        assert tcp_probe("sk-gw1", client, CLOSED) == "timeout"
        assert tcp_probe(None, client, CLOSED) == "timeout"
        assert tcp_probe("sk-client", "127.0.0.1", CLOSED) == "refused"
    finally:
        cut.restore()
    cut.restore()    # idempotent
    assert tcp_probe(None, client, CLOSED) == "refused"


def test_link_down_takes_the_host_off_the_bridge(topology):
    client, gw1 = topology.addr("sk-client"), topology.addr("sk-gw1")
    with LinkDown("sk-client"):
        assert tcp_probe("sk-gw1", client, CLOSED) == "timeout"
        assert tcp_probe("sk-client", gw1, CLOSED) in ("timeout", "error [Errno 113] No route to host")
    # Carrier and the bridge port's forwarding state come back within moments.
    assert probe_until("sk-gw1", client, "refused") == "refused"


def test_an_open_connection_stalls_under_a_cut_and_resumes_after(topology):
    """To a replica's Redis from this host: PING answered; cut; the next PING gets nothing
    (no reset, no error: the connection stays open); restore; its PONG arrives."""
    node = topology.conf.get("redis.nodes").split(",")[3]
    host, port = node.rsplit(":", 1)
    ns = next(n for n, (a, _, _) in topology.map.items() if a == host)
    s = socket.create_connection((host, int(port)), timeout=5)
    try:
        s.sendall(b"PING\r\n")
        assert s.recv(64) == b"+PONG\r\n"
        with Cut(ns, [netfault.HOST_ADDR]):
            s.sendall(b"PING\r\n")
            s.settimeout(1.5)
            try:
                got = s.recv(64)
            except socket.timeout:
                got = None
            assert got is None, f"answered through the cut: {got!r}"
        s.settimeout(15)
        assert s.recv(64) == b"+PONG\r\n"
    finally:
        s.close()


def median_rtt_ms(ns, host, port):
    return netfault.ping_rtt_ms(ns, host, port)


def test_delay_proxy_adds_latency_to_new_connections(topology):
    node = topology.conf.get("redis.nodes").split(",")[3]
    host, port = node.rsplit(":", 1)
    base = median_rtt_ms("sk-client", host, port)
    assert base < 10, f"{base:.2f} ms without a delay"
    with Delay("sk-client", [host], seconds=0.02) as d:
        slowed = median_rtt_ms("sk-client", host, port)
        assert 20 <= slowed < 20 + 15, f"{slowed:.2f} ms with 20 ms added (base {base:.2f})"
        d.set(0.002)
        two = median_rtt_ms("sk-client", host, port)
        assert 2 <= two < 2 + 10, f"{two:.2f} ms with 2 ms added"
    after = median_rtt_ms("sk-client", host, port)
    assert after < 10, f"{after:.2f} ms once the delay is gone"
    listing = subprocess.run(["ip", "netns", "exec", "sk-client", "nft", "list", "tables"],
                             capture_output=True, text=True).stdout
    assert netfault.PREFIX + "delay" not in listing
    print(f"PING round trip: {base:.2f} ms; +20 ms: {slowed:.2f}; +2 ms: {two:.2f}; after: {after:.2f}")


def test_the_benchmarks_delay_proxy_is_transparent_behind_the_redirect(topology):
    """bench/delayproxy.c as make bench-latency runs it in a gateway's namespace: the
    redirect sends a new connection to it, it finds the original destination and connects
    there with its mark (which the rule lets pass), and a round trip gains two one-way
    delays; once it and the rule are gone, the path is as quick as before."""
    proxy = topology.bin / "bench" / "delayproxy"
    assert proxy.exists(), f"{proxy} is not built (make {proxy.relative_to(topology.bin.parent)})"
    node = topology.conf.get("redis.nodes").split(",")[3]
    host, port = node.rsplit(":", 1)
    base = median_rtt_ms("sk-client", host, port)
    p = subprocess.Popen(["ip", "netns", "exec", "sk-client", str(proxy), "--one-way-us", "1000",
                          "--mark", hex(Redirect.MARK), "--exit-on-stdin-eof"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline().split()
        assert line[:1] == ["listening"], f"the proxy did not start: {line}"
        with Redirect("sk-client", [host], int(line[1])):
            slowed = median_rtt_ms("sk-client", host, port)
    finally:
        p.terminate()
        _, err = p.communicate(timeout=10)
    assert 2 <= slowed < 2 + 3, f"{slowed:.2f} ms with 2 ms added per round trip (base {base:.2f})"
    assert p.returncode == 0 and "1 connections (0 refused or failed)" in err, err
    after = median_rtt_ms("sk-client", host, port)
    assert after < 10, f"{after:.2f} ms once the proxy is gone"
    print(f"PING round trip: {base:.2f} ms; through bench/delayproxy at 1000 us each way: {slowed:.2f}")
