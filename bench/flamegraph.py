#!/usr/bin/env python3
"""Flame graph of a `perf record -g` profile, as one self-contained SVG.

    perf script -i perf.data | python3 bench/flamegraph.py --title T > out.svg
    perf script -i perf.data | python3 bench/flamegraph.py --folded > out.folded

Reads `perf script` text (one sample: a header line, then one frame per line, innermost
first, then a blank line), folds identical stacks, and draws them: the x axis is the share
of samples, each box a function, its callers below it. --folded prints the folded stacks
instead ("outer;inner count" lines), which diff well between two profiles. --min drops
boxes narrower than that share of all samples (default 0.002).
"""

import argparse
import html
import re
import sys
from collections import defaultdict

FRAME = re.compile(r"^\s*[0-9a-f]+\s+(.+?)(?:\s+\((.*)\))?$")


def samples(lines):
    """(comm, [(function, module), ...]) per sample of `perf script` text, innermost frame
    first, the offset dropped from each function ("tcp_sendmsg", not "tcp_sendmsg+0x1d")."""
    header, body = None, []
    for raw in list(lines) + [""]:
        line = raw.rstrip("\n")
        if not line.strip():
            if header is not None:
                words = header.split()
                yield (words[0] if words else "?"), body
            header, body = None, []
        elif header is None:
            header = line
        else:
            m = FRAME.match(line)
            if m:
                body.append((re.sub(r"\+0x[0-9a-f]+$", "", m.group(1)), m.group(2) or ""))


def fold(lines):
    """Folded stacks: {(comm, frame, ...): samples}, outermost frame first, a frame perf
    could not name shown as its module."""
    stacks = defaultdict(int)
    for comm, frames in samples(lines):
        names = [("[" + module.rsplit("/", 1)[-1] + "]" if module else "[unknown]")
                 if func == "[unknown]" else func for func, module in reversed(frames)]
        stacks[tuple([comm] + names)] += 1
    return stacks


class Node:
    __slots__ = ("name", "count", "children")

    def __init__(self, name):
        self.name, self.count, self.children = name, 0, {}


def tree_of(stacks):
    root = Node("all")
    for stack, n in stacks.items():
        root.count += n
        node = root
        for name in stack:
            node = node.children.setdefault(name, Node(name))
            node.count += n
    return root


def color(name):
    h = 0
    for ch in name:
        h = (h * 31 + ord(ch)) & 0xFFFFFF
    return f"rgb({205 + h % 50},{80 + (h >> 8) % 120},{40 + (h >> 16) % 50})"


def svg(root, title, min_share, width=1200, row=16):
    boxes = []
    depth_max = [0]

    def walk(node, x, depth):
        if node.count / root.count < min_share:
            return
        depth_max[0] = max(depth_max[0], depth)
        boxes.append((x, depth, node))
        cx = x
        for child in sorted(node.children.values(), key=lambda c: c.name):
            walk(child, cx, depth + 1)
            cx += child.count

    walk(root, 0, 0)
    height = (depth_max[0] + 1) * row + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="monospace" font-size="11">',
           f'<text x="{width / 2}" y="16" text-anchor="middle" font-size="14">{html.escape(title)}</text>']
    scale = (width - 20) / root.count
    for x, depth, node in boxes:
        bx, bw = 10 + x * scale, max(node.count * scale, 0.5)
        by = height - (depth + 1) * row - 4
        share = 100.0 * node.count / root.count
        label = f"{node.name} ({node.count} samples, {share:.1f}%)"
        out.append(f'<g><title>{html.escape(label)}</title><rect x="{bx:.1f}" y="{by}" width="{bw:.1f}" '
                   f'height="{row - 1}" fill="{color(node.name)}"/>')
        chars = int(bw / 7)
        if chars >= 3:
            text = node.name if len(node.name) <= chars else node.name[:chars - 2] + ".."
            out.append(f'<text x="{bx + 2:.1f}" y="{by + row - 4}">{html.escape(text)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--title", default="flame graph")
    ap.add_argument("--folded", action="store_true")
    ap.add_argument("--min", type=float, default=0.002)
    args = ap.parse_args()
    stacks = fold(sys.stdin)
    if not stacks:
        sys.exit("flamegraph: no samples on stdin (perf script output expected)")
    if args.folded:
        for stack, n in sorted(stacks.items(), key=lambda kv: -kv[1]):
            sys.stdout.write(";".join(stack) + f" {n}\n")
        return
    sys.stdout.write(svg(tree_of(stacks), args.title, args.min))


if __name__ == "__main__":
    main()
