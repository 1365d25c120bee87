"""Lab link shaping on real namespaces: [target.link] rate (tc tbf) and delay (netem)
measured with iperf3 and ping; per-host values; re-applied when a point changes them."""
import pytest
from pyroute2 import NetNS

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
            assert state["shaping"]["a"]["host_end"] == ["tbf"] and state["shaping"]["a"]["switch_end"] == ["tbf"]
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
        with NetNS(target.layout.ns("b")) as ns:
            assert [q["kind"] for q in lab_shaping.qdiscs(ns, target.layout.ns_if("b"))] == ["tbf"]
            lab_shaping.apply(ns, target.layout.ns_if("b"), None)  # no shape: back to the default
            assert "tbf" not in [q["kind"] for q in lab_shaping.qdiscs(ns, target.layout.ns_if("b"))]
    finally:
        target.close()
    assert lab_leftovers() == {}
