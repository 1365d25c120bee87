"""iperf2 2.1.8 runs with enhanced text (-e -f b -i 1), because it ignores -e with -y C
(issue 11): the live engine's command lines and parser on outputs of the real iperf 2.1.8
captured on loopback (tests/fixtures/iperf2/live_*, by tests/fixtures/capture_import.py),
and the text reader on hand-run modes (text_*: -i only, -e, UDP, -R, --full-duplex, -d)."""
from __future__ import annotations

import json

import pytest

from nettune.engines.iperf2 import Iperf2Engine, csv_output, report_rows
from nettune.engines.iperf2_enhanced import is_text, parse_text_rows
from nettune.engines.result import SideOutput
from nettune.studyfile.models import Workload

from fixtures_util import FIXTURES, close

ENGINE = Iperf2Engine()
LIVE = ["live_tcp_p2", "live_udp", "live_reverse", "live_fullduplex", "live_tcp_t1", "live_tcp_p2_late_sum"]


def load(mode: str) -> tuple[Workload, SideOutput, SideOutput, dict]:
    d = FIXTURES / "iperf2" / mode
    meta = json.loads((d / "meta.json").read_text())
    wl = Workload.model_validate({k: v for k, v in meta["workload"].items() if k in Workload.model_fields})
    read = lambda n: (d / n).read_text() if (d / n).exists() else ""  # noqa: E731
    return (wl, SideOutput(role="client", host="c", argv=meta["client_argv"], stdout=read("client.txt")),
            SideOutput(role="server", host="s", argv=meta["server_argv"], stdout=read("server.txt")), meta)


@pytest.mark.parametrize("mode", LIVE)
def test_live_fixture_argv_is_what_the_engine_builds_for_2_1_8(mode: str) -> None:
    wl, _, _, meta = load(mode)
    assert meta["tool_version"] == "2.1.8" and not csv_output("2.1.8") and csv_output("2.2.1")
    assert ENGINE.client_argv(wl, "127.0.0.1", meta["port"], "2.1.8") == meta["client_argv"]
    assert ENGINE.server_argv(wl, meta["port"], "2.1.8") == meta["server_argv"]
    assert "-y" not in meta["client_argv"] and "-e" in meta["client_argv"]


@pytest.mark.parametrize("mode", ["live_tcp_p2", "live_tcp_t1"])
def test_tcp_has_retransmits_cwnd_rtt_and_write_read_counts(mode: str) -> None:
    wl, c, s, _ = load(mode)
    res = ENGINE.parse(wl, c, s)
    assert res.ok, res.error
    assert len(res.streams) == wl.parallel and all(st.direction == "forward" for st in res.streams)
    assert res.retransmits is not None and res.retransmits == sum(st.retransmits for st in res.streams)  # type: ignore[misc]
    assert res.max_cwnd and res.max_cwnd % 1024 == 0 and res.rtt_mean_us and res.rtt_mean_us > 0
    assert all(st.max_cwnd and st.rtt_min_us and st.rtt_min_us <= st.rtt_mean_us <= st.rtt_max_us for st in res.streams)  # type: ignore[operator]
    assert res.extra["write_count"] > 0 and res.extra["read_count"] > 0 and res.extra["write_errors"] == 0
    # -f b: exact bytes; the sender's bytes are what the receiver got on loopback
    assert res.sender_bytes == res.receiver_bytes
    assert res.intervals and all(iv.cwnd and iv.rtt_us for iv in res.intervals)
    finals = [ln for ln in c.stdout.splitlines() if ln.startswith("[SUM]")]
    assert finals and close(res.sender_bps, float(finals[-1].split()[5]), 0.01)  # the [SUM] final line


def test_udp_has_jitter_loss_and_out_of_order() -> None:
    wl, c, s, _ = load("live_udp")
    res = ENGINE.parse(wl, c, s)
    assert res.ok and res.protocol == "udp"
    assert res.jitter_ms is not None and res.packets and res.lost_packets is not None and res.lost_percent is not None
    text = s.stdout
    ooo = sum(int(ln.split()[4]) for ln in text.splitlines() if "out-of-order" in ln and ln.split()[2].startswith("0.0000-2"))
    assert res.extra.get("udp_out_of_order", 0) == ooo
    assert res.extra["write_count"] > 0
    # the client's relayed server reports give the same receiver numbers when the server's
    # output is missing (an imported client log)
    alone = ENGINE.parse(wl, c, s.model_copy(update={"stdout": ""}))
    assert alone.ok and alone.packets == res.packets and alone.lost_packets == res.lost_packets


def test_reverse_takes_tcp_info_from_the_server_which_sends() -> None:
    wl, c, s, _ = load("live_reverse")
    res = ENGINE.parse(wl, c, s)
    assert res.ok and all(st.direction == "forward" for st in res.streams)
    assert res.retransmits is not None and res.max_cwnd and res.rtt_mean_us  # the server's -e writer columns
    assert res.extra["read_count"] > 0  # the client reads


def test_a_last_interval_sum_that_runs_past_its_streams_is_their_interval() -> None:
    """Under load, 2.1.8's [SUM] of the last interval ends at the sum's own close
    ("0.5000-1.0074") while its streams' rows say 0.5000-1.0000: it was stored as a third
    interval with no streams (CI's series round trip at -P 2 -i 0.5)."""
    wl, c, s, _ = load("live_tcp_p2_late_sum")
    sums = [ln.split()[1] for ln in c.stdout.splitlines() if ln.startswith("[SUM]")]
    assert sums[1].startswith("0.5000-") and sums[1] != "0.5000-1.0000"  # what the fixture is for
    res = ENGINE.parse(wl, c, s)
    assert res.ok, res.error
    assert [(iv.start, iv.end) for iv in res.intervals] == [(0.0, 0.5), (0.5, 1.0)]
    for iv in res.intervals:
        assert len(iv.streams) == 2 and iv.bps == pytest.approx(sum(st.bps for st in iv.streams), rel=1e-3)
    assert close(res.sender_bps, float(next(ln for ln in c.stdout.splitlines() if ln.startswith("[SUM] 0.0000-1")).split()[5]), 1e-6)


def test_full_duplex_stores_both_directions() -> None:
    wl, c, s, _ = load("live_fullduplex")
    res = ENGINE.parse(wl, c, s)
    assert res.ok
    assert {st.direction for st in res.streams} == {"forward", "reverse"}
    assert res.reverse_receiver_bps and res.reverse_retransmits is not None and res.retransmits is not None
    assert res.extra["reverse"]["max_cwnd"] and res.extra["reverse"]["write_count"] > 0


@pytest.mark.parametrize("mode", LIVE)
def test_server_done_on_text(mode: str) -> None:
    wl, _, s, _ = load(mode)
    assert ENGINE.server_done(wl, s.stdout)
    first_rows = "\n".join(s.stdout.splitlines()[:8]) + "\n"
    assert not ENGINE.server_done(wl, first_rows) and not ENGINE.server_done(wl, "")


def test_permit_key_around_the_id() -> None:
    """With --permit-key, 2.1.8 prints the key around the id: "[KEY(1)]" (the stored copy
    has it replaced by <secret>)."""
    text = ("Client connecting to 198.18.0.2, TCP port 5001 with pid 1 (1 flows)\n"
            "[<secret>(1)] local 198.18.0.1%v port 40000 connected with 198.18.0.2 port 5001 (sock=3)\n"
            "[<secret>(1)] 0.0000-1.0000 sec  100 Bytes  800 bits/sec  1/0  2  10K/5(1) us  1\n"
            "[<secret>(*1)] 0.0000-1.0000 sec  100 Bytes  800 bits/sec  3=1:1:1:0:0:0:0:0\n")
    rows, bad = parse_text_rows(text)
    assert bad == 0 and [(r.src_port, r.dst_port, r.ext.get("tcpretry"), r.ext.get("readcnt")) for r in rows] == [(40000, 5001, 2.0, None), (5001, 40000, None, 3.0)]  # sender first


@pytest.mark.parametrize("mode, two_way", [("text_plain", False), ("text_enhanced", False), ("text_udp", False), ("text_reverse", False),
                                           ("text_fullduplex", True), ("text_dualtest", True)])
def test_hand_run_text_rows_are_placed(mode: str, two_way: bool) -> None:
    """Every report line of every mode lands on a stream, sender port first."""
    meta = json.loads((FIXTURES / "iperf2" / mode / "meta.json").read_text())
    port = int(meta["server_argv"][-1])
    for side in ("client", "server"):
        text = (FIXTURES / "iperf2" / mode / f"{side}.txt").read_text()
        assert is_text(text)
        rows, bad = report_rows(text, False)
        assert bad == 0 and rows
        c2s = {(r.src_port, r.dst_port) for r in rows if r.dst_port == port}
        other = {(r.src_port, r.dst_port) for r in rows if r.dst_port != port and r.tid >= 0}
        sums = [r for r in rows if r.tid < 0]
        # [SUM] lines are kept as iperf2's totals only where a side's streams go one way
        assert bool(sums) == (not two_way and mode != "text_dualtest" and "[SUM]" in text)
        assert len(c2s) == (1 if mode == "text_dualtest" else 2) or mode == "text_reverse"
        assert bool(other) == (two_way or mode == "text_reverse"), (side, other)


def test_csv_is_still_read_for_2_2() -> None:
    """A 2.2 CSV report goes through the same rows (report_rows picks the reader)."""
    text = (FIXTURES / "iperf2" / "tcp_p4" / "client.stdout").read_text()
    assert not is_text(text) and report_rows(text, False)[0]
