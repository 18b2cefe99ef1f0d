"""Last: scripts/hosts.sh down stops every process and leaves no sk-* namespace, skv-*
veth or bridge behind (the session's end brings it down again only if this did not)."""

import subprocess

from conftest import DATA, leftovers


def test_down_leaves_nothing(topology):
    rc, out = topology.down()
    assert rc == 0, out
    assert leftovers() == []
    # A zombie is gone but for its exit status, which only its parent (here, whoever
    # adopted an orphaned daemon) collects.
    ps = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
    ours = [line for line in ps.splitlines() if not line.startswith("Z")
            and (str(DATA) in line or "10.77.0." in line or "delayproxy" in line)]
    assert ours == [], ours


def test_a_stale_set_is_cleaned_at_the_next_up(topology):
    """What an interrupted run can leave (a namespace with a process in it, a bridge without
    its address, a veth alone) is removed by the next up's network step, which then makes
    the whole set; clean removes that, and is a no-op the second time."""
    subprocess.run(["ip", "netns", "add", "sk-redis1"], check=True)
    sleeper = subprocess.Popen(["ip", "netns", "exec", "sk-redis1", "sleep", "300"])
    subprocess.run(["ip", "link", "add", "skbr0", "type", "bridge"], check=True)
    subprocess.run(["ip", "link", "add", "skv-stale", "type", "veth", "peer", "name", "skv-stale2"], check=True)
    try:
        rc, out = topology.sh("net-up", timeout=120)
        assert rc == 0, out
        assert sleeper.wait(timeout=20) is not None
        listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert len([n for n in listing.splitlines() if n.startswith("sk-")]) == len(topology.map)
        assert "skv-stale" not in leftovers()
        for _ in range(2):
            rc, out = topology.sh("clean")
            assert rc == 0, out
            assert leftovers() == []
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
        topology.sh("clean")
