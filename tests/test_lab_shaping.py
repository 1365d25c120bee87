"""Lab link shaping on real namespaces: [target.link] rate (tc htb + tbf per sender on the
receiver's switch end) and delay (netem) measured with iperf3 and ping; per-host values;
re-applied when a point changes them; over-rate UDP dropped at the bottleneck."""
import pytest

from nettune import parse_study
from nettune.errors import NettuneError, SpecError
from nettune.plan import expand, resolve
from nettune.targets.lab import lab_shaping
from nettune.targets.lab.lab import LabTarget

from conftest import lab_leftovers, needs_iperf3, needs_root
from lab_measure import iperf3_bps, ping_rtt_ms


def _netem_available() -> bool:
    return "CONFIG_NET_SCH_NETEM=y" in _kernel_config() or "CONFIG_NET_SCH_NETEM=m" in _kernel_config()


def _kernel_config() -> str:
    import gzip

    try:
        return gzip.open("/proc/config.gz", "rt").read()
    except OSError:
        return "CONFIG_NET_SCH_NETEM=m"  # no config to read: assume a distribution kernel (netem as a module)


needs_netem = pytest.mark.skipif(not _netem_available(), reason="this kernel has no sch_netem (CONFIG_NET_SCH_NETEM not set): delay cannot be shaped here")


def _study(link: str, sweep: str = "", name: str = "nettune-t-shape") -> str:
    return f"""
name = "{name}"
[target]
kind = "lab"
hosts = ["a", "b", "c"]
[target.link]
{link}
[workload]
server = "a"
client = "b"
[sweep]
{sweep}
"""


def test_link_values_parse_per_host_and_template():
    st = parse_study(_study('rate = "{r}"\ndelay = "20ms"\n[target.link.c]\nrate = "100M"\nloss = "0.5%"', 'r = ["1G", "2G"]'))
    pts = [resolve(st, p).target.link for p in expand(st)]
    assert [p.rate for p in pts] == [1_000_000_000, 2_000_000_000]
    assert pts[0].for_host("a").delay == 20.0 and pts[0].for_host("c").rate == 100_000_000
    assert pts[0].for_host("c").loss == 0.5 and pts[0].for_host("c").delay == 20.0  # the host's own over the shared
    args = lab_shaping.netem_args(pts[0].for_host("a"))
    assert args["delay"] == 5000  # 20 ms round trip: a quarter on each end of each host's link (us)
    swept = parse_study(_study('delay = "{rtt}"\njitter = "{rtt} / 10"'.replace('"{rtt} / 10"', '"{rtt_j}"'), 'rtt = ["500us", "20ms"]\nrtt_j = 2'))
    assert [(r.target.link.delay, r.target.link.jitter) for r in (resolve(swept, p) for p in expand(swept))] == [(0.5, 2.0), (20.0, 2.0)]
    assert lab_shaping.netem_args(resolve(swept, expand(swept)[0]).target.link.for_host("a"))["delay"] == 125


@pytest.mark.parametrize("link, where", [
    ('rate = "fast"', "target.link.rate"),
    ('delay = "20 parsecs"', "target.link.delay"),
    ('loss = "150%"', "target.link.loss"),
    ('jitter = "1ms"', "target.link"),
    ('[target.link.nothere]\nrate = "1G"', "target.link"),
    ('rate = "100G"', "target.link.rate"),
])
def test_bad_link_values_are_one_line_errors(link, where):
    with pytest.raises(SpecError) as e:
        parse_study(_study(link))
    assert where in str(e.value) and "\n" not in str(e.value)


@needs_root
@needs_iperf3
def test_rate_is_measured_and_reapplied_when_a_point_changes_it():
    st = parse_study(_study('rate = "{r}"\n[target.link.c]\nrate = "100M"', 'r = ["400M", "150M"]'))
    target = LabTarget(st)
    try:
        measured = []
        for p in expand(st):
            state = target.prepare(resolve(st, p))
            # the rate on the switch end, per sender, never on a sender's own end (lab_shaping.py)
            assert "tbf" not in state["shaping"]["a"]["host_end"]
            assert state["shaping"]["a"]["switch_end"][0] == "htb" and state["shaping"]["a"]["switch_end"].count("tbf") == 2  # from b, c
            measured.append(iperf3_bps(target, "a", "b"))
        assert 0.75 * 400e6 < measured[0] < 1.05 * 400e6
        assert 0.75 * 150e6 < measured[1] < 1.05 * 150e6
        # c's own link: both directions shaped (the switch end is b->c... here a receives from c)
        assert 0.75 * 100e6 < iperf3_bps(target, "a", "c") < 1.05 * 100e6
        assert 0.75 * 100e6 < iperf3_bps(target, "c", "a") < 1.05 * 100e6
    finally:
        target.close()
    assert lab_leftovers() == {}


@needs_root
def test_without_netem_delay_is_refused_with_the_reason():
    if _netem_available():
        pytest.skip("this kernel has netem: the refusal cannot be seen here")
    st = parse_study(_study('delay = "20ms"'))
    target = LabTarget(st)
    try:
        with pytest.raises(NettuneError, match="netem"):
            target.prepare(resolve(st, expand(st)[0]))
    finally:
        target.close()
    assert lab_leftovers() == {}


@needs_root
@needs_iperf3
@needs_netem
def test_delay_gives_the_round_trip_and_buffers_then_matter():
    st = parse_study(_study('rate = "1G"\ndelay = "20ms"'))
    target = LabTarget(st)
    try:
        target.prepare(resolve(st, expand(st)[0]))
        rtt = ping_rtt_ms(target, "a", "b")
        assert 18 < rtt < 30
        small, large = [], []
        for rmem, out in (("4096 65536 65536", small), ("4096 131072 33554432", large)):
            for h in ("a", "b"):
                target.hosts[h].write_text("/proc/sys/net/ipv4/tcp_rmem", rmem)
            out.append(iperf3_bps(target, "a", "b", seconds=3))
        # 64 KiB over 20 ms is ~26 Mbit/s at most; a 32 MiB buffer fills much more of the 1G link
        assert small[0] < 60e6 and large[0] > 4 * small[0]
    finally:
        target.close()
    assert lab_leftovers() == {}


@needs_root
def test_shaping_read_back_from_netlink_and_cleared():
    st = parse_study(_study('rate = "{r}"', 'r = ["1G", "{0}"]'.replace('"{0}"', '"2G"')))
    target = LabTarget(st)
    try:
        target.prepare(resolve(st, expand(st)[0]))
        from pyroute2 import IPRoute

        with IPRoute() as ipr:
            kinds = [q["kind"] for q in lab_shaping.qdiscs(ipr, target.layout.root_if("b"))]
            assert kinds[0] == "htb" and kinds.count("tbf") == 2  # one queue per sender: a, c
            lab_shaping.apply_switch_end(ipr, target.layout.root_if("b"), None, [])  # no shape: back to the default
            assert not {"htb", "tbf"} & {q["kind"] for q in lab_shaping.qdiscs(ipr, target.layout.root_if("b"))}
    finally:
        target.close()
    assert lab_leftovers() == {}


@needs_root
@needs_iperf3
@pytest.mark.parametrize("engine", ["iperf3", "iperf2"])
def test_udp_above_the_link_rate_is_offered_and_dropped_at_the_bottleneck(engine):
    """2G of UDP asked over a 1G link: the sender is not held back to the link's rate (its
    own host never queues for the link), the link carries ~1G, and the loss is what the
    bottleneck dropped: about 1 - rate / sent (issue 30: 0.95G sent, ~1% loss before)."""
    import shutil
    import subprocess

    from nettune.engines import get_engine
    from nettune.run.driver import run_test
    from nettune.studyfile.models import Workload

    if engine == "iperf2" and shutil.which("iperf") is None:
        pytest.skip("iperf2 not installed")
    # 8900-byte datagrams on MTU 9000: 2 Gbit/s is ~28k packets/s, which a 2-core box can send
    st = parse_study(_study('rate = "1G"', name="nettune-t-udp-over").replace('hosts = ["a", "b", "c"]', 'hosts = ["a", "b"]\nmtu = 9000'))
    target = LabTarget(st)
    try:
        target.prepare(resolve(st, expand(st)[0]))
        e = get_engine(engine)
        out = subprocess.run(e.version_argv(), capture_output=True, text=True)
        version = e.version(out.stdout + out.stderr)
        wl = Workload(engine=engine, protocol="udp", bitrate="2G", length=8900, duration=3, server="a", client="b", auth=False)
        res = run_test(e, wl, target.hosts["a"], target.hosts["b"], version)
        assert res.ok, res.error
        assert res.offered_bps == pytest.approx(2e9)
        # not held back to the link's 1G by a queue on its own host (before: 0.95G); a sender short of
        # CPU on a busy box may send less than the 2G asked (seen: 1.25G at load 7), never the link's rate
        assert res.sender_bps > 1.1e9
        # the link carries at most its rate; a receiver starved of CPU (a busy shared box: seen
        # 0.73G received at load 7 on 2 cores) drops more on top of the link, never fewer
        assert 0.5e9 < res.receiver_bps < 1.05e9
        expected = 100 * (1 - 1e9 / res.sender_bps)  # what the bottleneck had to drop of what was sent
        assert res.lost_percent > expected - 8, (res.lost_percent, expected, res.sender_bps)
        assert res.lost_percent == pytest.approx(100 * (1 - res.receiver_bps / res.sender_bps), abs=3)  # the loss is of what was sent
        assert (res.sender_bps < 0.95 * 2e9) == any("asked for" in w for w in res.warnings)
    finally:
        target.close()
    assert lab_leftovers() == {}
