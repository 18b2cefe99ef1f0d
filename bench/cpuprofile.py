"""Where a process's CPU goes during a benchmark run: the profile behind a missed target.

Two views, both cheap enough to take during a twin of a measured run:

- `Perf`: `perf record -a --call-graph dwarf` for a few seconds, read back per process;
  each sample is put in one category by its innermost frame: a system call (named by the
  libc wrapper that entered the kernel, so "kernel: writev" holds the loopback delivery to
  the client too), other kernel work, or the library or binary the CPU was executing
  (libc split into allocation, formatting and the rest; Lua inside Redis on its own;
  a JVM's compiled code is "[unknown]"); and the functions the most samples were inside of.
- `thread_ticks`: CPU ticks per thread name from /proc (for the JVM broker, whose frames
  perf cannot name).
"""

import os
import re
import subprocess
from collections import Counter

from flamegraph import samples

KERNEL = "[kernel.kallsyms]"
ALLOC = re.compile(r"malloc|free|calloc|realloc|_int_|unlink_chunk|tcache|cfree|memalign")
FORMAT = re.compile(r"printf|_IO_|strchrnul|__printf_|itoa|_fitoa|__mpn_|strtod|strtol")
TOP_FUNCTIONS = 10


def _module(path):
    base = os.path.basename(path or "")
    base = re.sub(r"\.so[.\d]*$", "", base)
    return re.sub(r"-[\d.]+$", "", base) or "[unknown]"


def _syscall(user_frame):
    name = re.sub(r"^(__GI_+|__libc_|_+)", "", user_frame)
    name = re.sub(r"^(GI_+|libc_)", "", name)
    return name or "?"


def classify(frames, binary):
    """One sample's category. frames: (function, module), innermost first."""
    func, module = frames[0]
    if module == "inlined":  # the code it was inlined into is the next frame's module
        module = next((m for _, m in frames if m != "inlined"), "")
    if module == KERNEL:
        names = [f for f, _ in frames]
        user = next((f for f, m in frames if m != KERNEL), None)
        if any(n.startswith("do_syscall_64") for n in names) and user:
            return f"kernel: {_syscall(user)}"
        if any("softirq" in n or "irq" in n for n in names):
            return "kernel: interrupts"
        return "kernel: other (scheduling, faults)"
    mod = _module(module)
    if mod in ("libc", "ld-linux-x86-64"):
        if ALLOC.search(func):
            return "libc: malloc/free"
        if FORMAT.search(func):
            return "libc: formatting"
        return "libc: other"
    if mod == binary and re.match(r"lua[A-Z_]|luaV_|luaH_|luaS_|luaD_|luaC_|luaF_|luaG_|luaK_", func):
        return "Lua interpreter"
    if mod == binary:
        return "its own code"
    return mod


class Perf:
    """One system-wide `perf record` for `seconds`, started in the background, read back
    per process. System-wide, because a process's threads born after perf attached to it
    (MariaDB's for a new connection) would be missed by `perf record -p`."""

    def __init__(self, out_dir, pids, seconds, freq=499):
        self.pids = dict(pids)
        self.data = os.path.join(out_dir, "perf.data")
        self.err = None
        # The executable's own frames are named by its real file (Debian's redis-server is
        # a link to redis-check-rdb).
        self.binaries = {}
        os.makedirs(out_dir, exist_ok=True)
        for name, pid in self.pids.items():
            try:
                self.binaries[name] = _module(os.path.realpath(f"/proc/{pid}/exe"))
            except OSError:
                self.binaries[name] = name
        argv = ["perf", "record", "-a", "-F", str(freq), "--call-graph", "dwarf,16384", "-o", self.data,
                "--", "sleep", str(seconds)]
        try:
            self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        except OSError as e:
            self.proc, self.err = None, str(e)

    def breakdown(self):
        """{name: {"samples": N, "categories": [(category, share)], "within": [(f, share)]}},
        or {name: {"error": why}} for every process when perf could not record."""
        if self.proc is not None:
            _, stderr = self.proc.communicate(timeout=120)
            if self.proc.returncode != 0:
                self.err = ((stderr or "").strip().splitlines() or [f"exit {self.proc.returncode}"])[-1]
        if self.err:
            return {name: {"error": self.err} for name in self.pids}
        out = {}
        for name, pid in self.pids.items():
            script = subprocess.run(["perf", "script", "-i", self.data, "--pid", str(pid)],
                                    capture_output=True, text=True, timeout=600)
            cats, within, n = Counter(), Counter(), 0
            for _, frames in samples(script.stdout.splitlines()):
                if not frames:
                    continue
                cats[classify(frames, self.binaries[name])] += 1
                within.update({f for f, m in frames if m not in (KERNEL, "inlined") and not f.startswith("[unknown]")})
                n += 1
            if not n:
                out[name] = {"error": "no samples"}
                continue
            # The functions the most samples were inside of, less the loop and its wrappers
            # that hold nearly all of them.
            functions = [(f, v / n) for f, v in within.most_common() if v / n < 0.85]
            out[name] = {
                "samples": n,
                "categories": [(c, round(v / n, 4)) for c, v in cats.most_common()],
                "within": [(f, round(v, 4)) for f, v in functions[:TOP_FUNCTIONS]],
            }
        return out


def thread_ticks(pid):
    """{thread name with its number dropped: utime + stime ticks} of a process."""
    ticks = Counter()
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return ticks
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        ticks[re.sub(r"[-_ ]?\d+$", "", name) or name] += int(fields[11]) + int(fields[12])
    return ticks


def thread_shares(t0, t1):
    """[(thread name, share of the process's CPU between two thread_ticks)], largest first."""
    d = Counter({k: t1[k] - t0.get(k, 0) for k in t1})
    total = sum(v for v in d.values() if v > 0)
    if not total:
        return []
    return [(k, round(v / total, 4)) for k, v in d.most_common() if v > 0]

