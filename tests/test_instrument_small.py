"""Smaller items of issue 30: the direction as one sweepable value (`mode`)."""
import pytest

from nettune import SpecError, parse_study
from nettune.engines import get_engine
from nettune.plan.points import expand_and_check

SWEPT = """
name = "modes"
[target]
kind = "local"
[workload]
engine = "{engine}"
mode = "{mode}"
[sweep]
engine = ["iperf3", "iperf2"]
mode = ["forward", "reverse", "bidir"]
"""
FLAG = {"iperf3": {"reverse": "-R", "bidir": "--bidir"}, "iperf2": {"reverse": "-R", "bidir": "--full-duplex"}}


def test_mode_sweeps_the_direction_as_one_parameter():
    seen = set()
    for rp in expand_and_check(parse_study(SWEPT)):
        e, mode = rp.point.params["engine"], rp.point.params["mode"]
        argv = get_engine(e).client_argv(rp.workload, "127.0.0.1", 5201, "3.12" if e == "iperf3" else "2.1.8")
        assert (rp.workload.reverse, rp.workload.bidir) == (mode == "reverse", mode == "bidir")
        for m, flag in FLAG[e].items():
            assert (flag in argv) == (mode == m), (e, mode, argv)
        seen.add((e, mode))
    assert len(seen) == 6


@pytest.mark.parametrize("extra", ['reverse = true', 'bidir = true'])
def test_mode_with_reverse_or_bidir_is_refused_naming_the_field(extra):
    text = f'name = "m"\n[target]\nkind = "local"\n[workload]\nmode = "forward"\n{extra}\n'
    with pytest.raises(SpecError, match="mode and reverse/bidir: give one"):
        parse_study(text)


def test_mode_outside_its_values_is_refused():
    with pytest.raises(SpecError, match="workload.mode"):
        parse_study('name = "m"\n[target]\nkind = "local"\n[workload]\nmode = "sideways"\n')


# --- offered vs sent ----------------------------------------------------------------------

from nettune.engines.result import SideOutput  # noqa: E402
from nettune.studyfile.models import Workload  # noqa: E402

from fixtures_util import FIXTURES, load_capture  # noqa: E402


def _iperf2_udp(bitrate):
    d = FIXTURES / "iperf2" / "live_udp"  # iperf 2.1.8 -u -b 100000000 -P 2 on loopback (meta.json)
    wl = Workload(engine="iperf2", protocol="udp", duration=2, parallel=2, bitrate=bitrate)
    return get_engine("iperf2").parse(wl, SideOutput(role="client", host="c", argv=[], stdout=(d / "client.txt").read_text()),
                                      SideOutput(role="server", host="s", argv=[], stdout=(d / "server.txt").read_text()))


def test_udp_keeps_the_rate_asked_for_and_warns_when_the_sender_sent_less():
    wl, cli, srv, _ = load_capture(FIXTURES / "iperf3", "udp")  # iperf3 3.12 -u -b 100M -P 2: sent 200M
    res = get_engine("iperf3").parse(wl, cli, srv)
    assert res.offered_bps == pytest.approx(2 * 100e6) and not any("asked for" in w for w in res.warnings)
    asked_more = cli.model_copy(update={"stdout": cli.stdout.replace('"target_bitrate":\t100000000', '"target_bitrate":\t500000000')})
    res = get_engine("iperf3").parse(wl, asked_more, srv)
    assert res.offered_bps == pytest.approx(1e9)
    assert [w for w in res.warnings if "the sender sent 200 Mbit/s of the 1 Gbit/s asked for (20%)" in w]
    # iperf2: -b as the study gave it, else the pace its client printed (IPG target: the default -b)
    res = _iperf2_udp(None)
    assert res.offered_bps == pytest.approx(2 * 100e6, rel=0.001) and not any("asked for" in w for w in res.warnings)
    res = _iperf2_udp("500M")
    assert res.offered_bps == pytest.approx(1e9) and any("asked for" in w for w in res.warnings)


def test_tcp_without_a_rate_has_nothing_offered():
    wl, cli, srv, _ = load_capture(FIXTURES / "iperf3", "tcp_p4")
    assert get_engine("iperf3").parse(wl, cli, srv).offered_bps is None



# --- one error line each ------------------------------------------------------------------


def test_each_error_is_one_line_ending_in_a_newline(tmp_path):
    """Issue 30 saw `...are allowederror: rd.db: no study`: an expression error followed by
    another command's error on the same line. Each command's error is one whole line."""
    from nettune.store.writer import StoreWriter

    from conftest import nettune

    f = tmp_path / "bad.toml"
    f.write_text('name = "badexpr"\n[target]\nkind = "local"\n[workload]\nduration = 1\nparallel = "{q}"\n[sweep]\np = [1, 2]\nq = "{p} ** 2"\n')
    StoreWriter(tmp_path / "rd.db").close()  # a database without a study
    for args in (("run", str(f), "--db", str(tmp_path / "rd.db")), ("run", str(f), "--dry-run"), ("analyze", "--db", str(tmp_path / "rd.db"))):
        p = nettune(*args)
        assert p.returncode == 2 and p.stderr.startswith("error: ") and p.stderr.endswith("\n") and p.stderr.count("\n") == 1, p.stderr
    assert "are allowed\n" in nettune("run", str(f), "--dry-run").stderr
