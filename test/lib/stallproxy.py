"""A TCP proxy in front of one backend (Redis) that a test can stall or slow down.
Stalled, it keeps every connection open and accepts new ones, but forwards nothing
either way (what it reads is dropped), so the client behind it sees a backend that never
answers. Slowed (`delay` seconds), every answer reaches the client that much later than
the backend sent it, without piling up behind earlier ones. Only the process pointed at
the proxy is affected; the shared backend goes on serving the others."""

import queue
import socket
import threading
import time


class StallProxy:
    def __init__(self, target_host, target_port):
        self.target = (target_host, int(target_port))
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
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
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
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
