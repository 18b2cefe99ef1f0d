"""A TCP proxy in front of one backend (Redis) that a test can stall or slow down.
Stalled, it keeps every connection open and accepts new ones, but forwards nothing
either way (what it reads is dropped), so the client behind it sees a backend that never
answers. Slowed (`delay` seconds), every answer reaches the client that much later than
the backend sent it, without piling up behind earlier ones. Only the process pointed at
the proxy is affected; the shared backend goes on serving the others.

Transparent (target None): each connection goes where its client meant it to go before a
`redirect` rule of the kernel's NAT sent it here (SO_ORIGINAL_DST), so a process that finds
its backends by itself (a Redis Cluster's slot map names the nodes) is slowed without
being pointed anywhere; `mark` marks the proxy's own upstream connections so that the rule
can leave them alone. Run as a program (`python3 stallproxy.py --listen 127.0.0.1:0
--mark 0x5c`, inside a namespace: netfault.Delay), it prints its port and takes
`delay SECONDS`, `stall` and `resume` lines on stdin."""

import argparse
import queue
import socket
import struct
import sys
import threading
import time

SO_ORIGINAL_DST = 80    # linux/netfilter_ipv4.h


def original_dst(sock):
    """Where a redirected connection was headed: (host, port)."""
    raw = sock.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, addr = struct.unpack("!2xH4s8x", raw)
    return socket.inet_ntoa(addr), port


class StallProxy:
    def __init__(self, target_host=None, target_port=None, listen=("127.0.0.1", 0), mark=None):
        self.target = None if target_host is None else (target_host, int(target_port))
        self.mark = mark
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(listen)
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.stalled = threading.Event()
        self.delay = 0.0
        self.closed = threading.Event()
        self.lock = threading.Lock()
        self.sockets = []
        threading.Thread(target=self._accept, daemon=True).start()

    def stall(self):
        self.stalled.set()

    def resume(self):
        """Passes data again; what came while stalled is gone."""
        self.stalled.clear()

    def _accept(self):
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = None
            try:
                target = self.target or original_dst(client)
                upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                if self.mark is not None:
                    upstream.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, self.mark)
                upstream.settimeout(5)
                upstream.connect(target)
                upstream.settimeout(None)
                upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                if upstream is not None:
                    upstream.close()
                client.close()
                continue
            with self.lock:
                self.sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            late = queue.Queue()
            threading.Thread(target=self._pump, args=(upstream, client, late), daemon=True).start()
            threading.Thread(target=self._deliver, args=(late, client), daemon=True).start()

    def _deliver(self, late, dst):
        """Sends what the backend answered once its delay has passed, in order."""
        while True:
            item = late.get()
            if item is None:
                return
            due, data = item
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                dst.sendall(data)
            except OSError:
                return

    def _pump(self, src, dst, late=None):
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                # The other side keeps the connection while stalled: a dropped answer
                # must not show up as a closed socket.
                if late is not None:
                    late.put(None)
                if not self.stalled.is_set():
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                return
            if self.stalled.is_set():
                continue
            if late is not None:
                late.put((time.monotonic() + self.delay, data))
                continue
            try:
                dst.sendall(data)
            except OSError:
                return

    def close(self):
        self.closed.set()
        try:
            self.listener.close()
        except OSError:
            pass
        with self.lock:
            for s in self.sockets:
                try:
                    s.close()
                except OSError:
                    pass
            self.sockets.clear()


def main():
    ap = argparse.ArgumentParser(description="a stall/delay TCP proxy, controlled on stdin")
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--target", help="host:port; without it, transparent (SO_ORIGINAL_DST)")
    ap.add_argument("--mark", type=lambda v: int(v, 0), help="SO_MARK of the upstream connections")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds added to every answer")
    a = ap.parse_args()
    host, _, port = a.listen.rpartition(":")
    th, _, tp = (a.target or "").rpartition(":")
    proxy = StallProxy(th or None, tp or None, listen=(host, int(port)), mark=a.mark)
    proxy.delay = a.delay
    print(f"listening {proxy.port}", flush=True)
    # Stdin closed (the test ended, or died): the proxy goes with it.
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["delay"]:
            proxy.delay = float(words[1])
        elif words[:1] == ["stall"]:
            proxy.stall()
        elif words[:1] == ["resume"]:
            proxy.resume()
        print(f"ok {line.strip()}", flush=True)
    proxy.close()


if __name__ == "__main__":
    main()
