"""Measuring a real lab from tests: iperf3 and ping between two lab hosts (by PID, cleaned up)."""
import json
import re
import subprocess

from nettune.targets.lab.lab import LabTarget


def iperf3_bps(target: LabTarget, server: str, client: str, seconds: int = 2, extra: tuple[str, ...] = ()) -> float:
    """Receiver bits/s of a TCP test from client to server."""
    s, c = target.hosts[server], target.hosts[client]
    srv = subprocess.Popen(["ip", "netns", "exec", s.netns, "iperf3", "-s", "-1", "-B", s.address], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):  # start the client once the server listens (read from /proc, no connection)
            if s.listening(5201, pid=srv.pid):
                break
            subprocess.run(["sleep", "0.05"])
        out, err = "", ""
        for _ in range(5):  # a first SYN can be lost while a moved host's MAC is learned again
            p = subprocess.run(["ip", "netns", "exec", c.netns, "iperf3", "-c", s.address, "-J", "-t", str(seconds), *extra],
                               capture_output=True, text=True, timeout=seconds + 30)
            out, err = p.stdout, p.stderr
            if p.returncode == 0:
                break
            subprocess.run(["sleep", "0.2"])
        assert p.returncode == 0, f"iperf3 {client} -> {server} failed: {out[-300:]} {err[-300:]}"
        srv.wait(timeout=15)
        return float(json.loads(out)["end"]["sum_received"]["bits_per_second"])
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()


def ping_rtt_ms(target: LabTarget, src: str, dst: str, count: int = 5) -> float:
    """Average RTT in ms from ping's summary line."""
    s, d = target.hosts[src], target.hosts[dst]
    p = subprocess.run(["ip", "netns", "exec", s.netns, "ping", "-c", str(count), "-i", "0.2", "-W", "2", d.address],
                       capture_output=True, text=True, timeout=30)
    m = re.search(r"= [\d.]+/([\d.]+)/", p.stdout)
    assert m, p.stdout + p.stderr
    return float(m.group(1))
