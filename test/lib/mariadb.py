"""MariaDB from the tests and the benchmark, through the `mariadb` client (-N -B: rows as
tab-separated lines, no header), with the connection settings of a configuration.

  MySQL    one client process per statement: a failed statement raises AssertionError
           and leaves nothing behind (the tests' helper)
  Session  one long-lived client: statements go in on stdin, each followed by a marker
           query, so that a poll costs a round trip, not a process start (the benchmark's)
  RowLock  a session holding a row lock in an open transaction until release()
"""

import os
import subprocess
import threading


def client_args(conf):
    return ["mariadb", "-h", conf.get("mysql.host"), "-P", conf.get("mysql.port"),
            "-u", conf.get("mysql.user"), conf.get("mysql.database"), "-N", "-B"]


def client_env(conf):
    return dict(os.environ, MYSQL_PWD=conf.get("mysql.password"))


class _Rows:
    def scalar(self, sql):
        rows = self.rows(sql)
        return rows[0][0] if rows else None

    def count(self, sql):
        return int(self.scalar(sql))


class MySQL(_Rows):
    def __init__(self, conf):
        self.args = client_args(conf)
        self.env = client_env(conf)

    def rows(self, sql):
        p = subprocess.run(self.args + ["-e", sql], env=self.env, capture_output=True,
                           text=True, timeout=60)
        if p.returncode != 0:
            raise AssertionError(f"mariadb failed ({p.returncode}) on {sql!r}: {p.stderr.strip()}")
        return [line.split("\t") for line in p.stdout.splitlines()]


class Session(_Rows):
    MARK = "#END#"

    def __init__(self, conf):
        self.argv = client_args(conf) + ["-n"]
        self.env = client_env(conf)
        self.lock = threading.Lock()
        self.proc = None

    def _open(self):
        self.proc = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     bufsize=1)

    def rows(self, sql):
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._open()
            self.proc.stdin.write(f"{sql.rstrip().rstrip(';')};\nSELECT '{self.MARK}';\n")
            self.proc.stdin.flush()
            rows = []
            while True:
                line = self.proc.stdout.readline()
                if not line:
                    err = self.proc.stderr.read()
                    self.proc = None
                    raise RuntimeError(f"mariadb failed on {sql!r}: {err.strip()}")
                line = line.rstrip("\n")
                if line == self.MARK:
                    return [r.split("\t") for r in rows]
                rows.append(line)

    def close(self):
        with self.lock:
            if self.proc and self.proc.poll() is None:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            self.proc = None


class RowLock:
    def __init__(self, mysql, sql):
        self.p = subprocess.Popen(mysql.args + ["--unbuffered"], env=mysql.env, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        self.p.stdin.write(f"START TRANSACTION; {sql} FOR UPDATE; SELECT 'locked';\n")
        self.p.stdin.flush()
        for line in self.p.stdout:
            if line.strip() == "locked":
                return
        raise AssertionError(f"could not take the lock: {self.p.stderr.read()}")

    def release(self):
        if self.p.poll() is None:
            self.p.stdin.write("ROLLBACK;\n")
            self.p.stdin.close()
            self.p.wait(timeout=30)
