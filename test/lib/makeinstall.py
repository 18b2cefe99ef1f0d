"""`make install` / `make uninstall` of the checkout into a directory of the test's own,
for the install and systemd-unit tests. The release build (build/) is what gets installed,
as an operator would install it; make links the binaries for the layout asked for."""

import subprocess


def make(root, target, prefix, destdir=None, timeout=600):
    """Runs `make -s TARGET PREFIX=prefix [DESTDIR=destdir]` in the checkout; returns the
    CompletedProcess and fails with make's output when it did not succeed."""
    args = ["make", "-s", target, f"PREFIX={prefix}"]
    if destdir is not None:
        args.append(f"DESTDIR={destdir}")
    p = subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"{' '.join(args)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def files_under(top):
    """Every file and symlink below top, as paths relative to it."""
    return {str(p.relative_to(top)) for p in top.rglob("*") if p.is_file() or p.is_symlink()}
