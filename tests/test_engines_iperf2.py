"""Iperf2Engine: command lines and the -y C parser, on outputs captured from iperf 2.1.8
over loopback (tests/fixtures/iperf2, made by tests/fixtures/capture.py). Expected values
are derived from the raw CSV here with the csv module, independently of the parser."""
from __future__ import annotations

import csv
import io
from typing import Any

import pytest

from nettune.engines import get_engine
from nettune.engines.access import Access
from nettune.engines.base import client_budget
from nettune.engines.iperf2 import Iperf2Engine, _port_from_argv, parse_rows
from nettune.engines.result import SideOutput
from nettune.engines.result import TestResult as Result
from nettune.studyfile.models import Workload

from fixtures_util import FIXTURES, close, load_capture

FIX = FIXTURES / "iperf2"
MODES = ["tcp_p4", "udp", "reverse", "fullduplex", "tcp_t1"]
ENGINE = Iperf2Engine()


def load(mode: str) -> tuple[Workload, SideOutput, SideOutput, dict[str, Any]]:
    return load_capture(FIX, mode)


def parsed(mode: str) -> tuple[Result, Workload, SideOutput, SideOutput, dict[str, Any]]:
    wl, c, s, meta = load(mode)
    return ENGINE.parse(wl, c, s), wl, c, s, meta


def raw_rows(text: str) -> list[list[str]]:
    return [r for r in csv.reader(io.StringIO(text)) if r]


def raw_finals(text: str, duration: int) -> list[list[str]]:
    """Rows spanning the whole test; with a 1 s test the last of each stream's pair."""
    span = f"0.0-{duration:.1f}"
    last: dict[tuple[str, str, str], list[str]] = {}
    for r in raw_rows(text):
        if r[6] == span:
            last[(r[2], r[4], r[5])] = r
    return list(last.values())


def to_server(rows: list[list[str]], port: int) -> list[list[str]]:
    return [r for r in rows if int(r[4]) == port]  # 2.1.8 rows name the sender first


def from_server(rows: list[list[str]], port: int) -> list[list[str]]:
    return [r for r in rows if int(r[2]) == port]


# --- parsing real outputs -------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_fixture_parses_ok(mode: str) -> None:
    res, wl, _, _, meta = parsed(mode)
    assert res.ok, res.error
    assert res.engine == "iperf2"
    assert res.protocol == wl.protocol
    assert res.duration == float(wl.duration)
    assert res.extra["unparsed_lines"] == {"client": 0, "server": 0}
    assert res.tool_cpu == {}  # iperf2 reports no CPU


@pytest.mark.parametrize("mode", MODES)
def test_totals_match_raw_final_rows(mode: str) -> None:
    res, wl, c, s, meta = parsed(mode)
    port, dur = meta["port"], wl.duration
    cf, sf = raw_finals(c.stdout, dur), raw_finals(s.stdout, dur)
    if wl.reverse:  # server sends, client receives
        snd, rcv = from_server(sf, port), from_server(cf, port)
    else:
        snd, rcv = to_server(cf, port), to_server(sf, port)
    assert len(snd) == len(rcv) == wl.parallel
    assert res.sender_bps == sum(float(r[8]) for r in snd)
    assert res.receiver_bps == sum(float(r[8]) for r in rcv)
    assert res.sender_bytes == sum(int(r[7]) for r in snd)
    assert res.receiver_bytes == sum(int(r[7]) for r in rcv)
    assert res.receiver_bps > 0


@pytest.mark.parametrize("mode", MODES)
def test_streams_count_and_sum(mode: str) -> None:
    res, wl, _, _, meta = parsed(mode)
    directions = ["forward", "reverse"] if wl.bidir else ["forward"]
    for d in directions:
        ss = [x for x in res.streams if x.direction == d]
        assert len(ss) == meta["workload"]["parallel"]
        total = res.receiver_bps if d == "forward" else res.reverse_receiver_bps
        assert close(sum(x.receiver_bps or 0 for x in ss), total)
        assert all((x.sender_bps or 0) > 0 and (x.receiver_bps or 0) > 0 for x in ss)
        assert sorted(x.id for x in ss) == list(range(1, wl.parallel + 1))  # the client's transfer ids
    assert len(res.streams) == wl.parallel * len(directions)


@pytest.mark.parametrize("mode", MODES)
def test_intervals_per_second(mode: str) -> None:
    res, wl, c, _, meta = parsed(mode)
    for d in (["forward", "reverse"] if wl.bidir else ["forward"]):
        ivs = [iv for iv in res.intervals if iv.direction == d]
        assert len(ivs) == wl.duration
        assert [(iv.start, iv.end) for iv in ivs] == [(float(i), float(i + 1)) for i in range(wl.duration)]
        for iv in ivs:
            assert len(iv.stream_bps) == wl.parallel
            assert iv.bps == pytest.approx(sum(iv.stream_bps))
            assert iv.retransmits is None and iv.cwnd is None  # 2.1.8 CSV has no -e extras
    # the interval rows of the client, independently: all 1 s rows but each stream's final
    n_final = len(raw_finals(c.stdout, wl.duration))
    n_ival = sum(len(iv.stream_bps) for iv in res.intervals)
    assert n_ival == len(raw_rows(c.stdout)) - n_final


def test_one_second_test_interval_and_final_look_alike() -> None:
    res, wl, c, s, meta = parsed("tcp_t1")
    rows = raw_rows(c.stdout)
    assert all(r[6] == "0.0-1.0" for r in rows) and len(rows) == 2 * wl.parallel
    assert len(res.intervals) == 1
    finals = raw_finals(c.stdout, 1)  # the second row of each stream
    assert res.sender_bps == sum(float(r[8]) for r in finals)
    assert res.intervals[0].bps == sum(float(r[8]) for r in rows if r not in finals)


def test_single_stream_without_sum_row() -> None:
    """-P 1 prints no sum row (2.2 neither): the one stream is the total. Cut one stream
    out of the -P 4 capture."""
    wl, c, s, meta = load("tcp_p4")
    port = next(r[2] for r in raw_rows(c.stdout))
    keep = lambda text: "".join(ln + "\n" for ln in text.splitlines() if f",{port}," in ln)  # noqa: E731
    one = wl.model_copy(update={"parallel": 1})
    res = ENGINE.parse(one, c.model_copy(update={"stdout": keep(c.stdout)}), s.model_copy(update={"stdout": keep(s.stdout)}))
    assert res.ok and len(res.streams) == 1
    assert res.receiver_bps == res.streams[0].receiver_bps == float(raw_finals(keep(s.stdout), 2)[0][8])


def test_udp_loss_comes_from_the_server() -> None:
    res, wl, c, s, meta = parsed("udp")
    # the client's final rows carry no receiver report (datagrams -1, jitter 0)
    assert all(r[11] == "-1" for r in raw_finals(c.stdout, 2))
    sf = raw_finals(s.stdout, 2)
    assert res.packets == sum(int(r[11]) for r in sf) > 0
    assert res.lost_packets == sum(int(r[10]) for r in sf)
    assert res.lost_percent == pytest.approx(100.0 * res.lost_packets / res.packets)
    assert res.jitter_ms == pytest.approx(sum(float(r[9]) for r in sf) / len(sf))
    for x in res.streams:
        assert x.packets and x.packets > 0 and x.jitter_ms is not None
        assert x.lost_percent == pytest.approx(100.0 * (x.lost_packets or 0) / x.packets, abs=0.001)  # printed %.3f


def test_udp_without_server_output_fails_with_reason() -> None:
    wl, c, s, _ = load("udp")
    res = ENGINE.parse(wl, c, s.model_copy(update={"stdout": ""}))
    assert not res.ok and "server" in (res.error or "")
    assert res.sender_bps and res.receiver_bps is None and res.packets is None


def test_reverse_server_sends() -> None:
    res, wl, c, s, meta = parsed("reverse")
    assert all(int(r[2]) == meta["port"] for r in raw_rows(c.stdout))  # sender first: the server
    assert {x.direction for x in res.streams} == {"forward"}
    assert res.reverse_receiver_bps is None


def test_fullduplex_both_directions() -> None:
    res, wl, c, s, meta = parsed("fullduplex")
    port = meta["port"]
    assert res.receiver_bps and res.receiver_bps > 0
    assert res.reverse_receiver_bps and res.reverse_receiver_bps > 0
    assert res.reverse_sender_bps and res.reverse_sender_bps > 0
    # the client's receive rows have no peer ("::,0"): matched to streams by transfer id
    back = from_server(raw_finals(c.stdout, 2), port)
    assert back and all(r[3:5] == ["::", "0"] for r in back)
    assert res.reverse_receiver_bps == sum(float(r[8]) for r in back)
    assert res.reverse_sender_bps == sum(float(r[8]) for r in from_server(raw_finals(s.stdout, 2), port))
    assert res.total_bps == res.receiver_bps + res.reverse_receiver_bps
    assert res.extra["reverse"]["receiver_bytes"] == sum(int(r[7]) for r in back)


# --- other versions' layout and failures -------------------------------------------------

# 2.2.x CSV, built from its Locale.c format strings (no 2.2 binary here): a header row,
# istart/iend in two columns, the -e write extras, sum rows with transfer id -1.
V22_CLIENT = """\
time,srcaddress,srcport,dstaddr,dstport,transferid,istart,iend,bytes,speed,writecnt,writeerr,tcpretry,tcpcwnd,tcppcwnd,tcprtt,tcprttvar
20250101120000.100,10.0.0.2,40001,10.0.0.1,5001,1,0.0,1.0,1000000,8000000,8,0,1,100,0,200,20
20250101120000.100,10.0.0.2,40002,10.0.0.1,5001,2,0.0,1.0,3000000,24000000,24,0,2,300,0,400,40
20250101120000.100,10.0.0.2,0,10.0.0.1,5001,-1,0.0,1.0,4000000,32000000,32,0,3,-1,0,0,0
20250101120001.100,10.0.0.2,40001,10.0.0.1,5001,1,1.0,2.0,1000000,8000000,8,0,0,120,0,300,20
20250101120001.100,10.0.0.2,40002,10.0.0.1,5001,2,1.0,2.0,1000000,8000000,8,0,0,310,0,500,40
20250101120001.100,10.0.0.2,0,10.0.0.1,5001,-1,1.0,2.0,2000000,16000000,16,0,0,-1,0,0,0
20250101120001.200,10.0.0.2,40001,10.0.0.1,5001,1,0.0,2.0,2000000,8000000,16,0,1,120,0,300,20
20250101120001.200,10.0.0.2,40002,10.0.0.1,5001,2,0.0,2.0,4000000,16000000,32,0,2,310,0,500,40
20250101120001.200,10.0.0.2,0,10.0.0.1,5001,-1,0.0,2.0,6000000,24000000,48,0,3,-1,0,0,0
"""
V22_SERVER = """\
time,srcaddress,srcport,dstaddr,dstport,transferid,istart,iend,bytes,speed,readcnt,bin0,bin1,bin2,bin3,bin4,bin5,bin6,bin7
20250101120001.200,10.0.0.2,40001,10.0.0.1,5001,1,0.0,2.0,2000000,7900000,9,1,1,1,1,1,1,1,2
20250101120001.200,10.0.0.2,40002,10.0.0.1,5001,2,0.0,2.0,4000000,15900000,9,1,1,1,1,1,1,1,2
20250101120001.200,10.0.0.2,0,10.0.0.1,5001,-1,0.0,2.0,6000000,23700000,18,2,2,2,2,2,2,2,4
"""


def test_v22_header_split_columns_extras_and_sum_rows() -> None:
    wl = Workload(engine="iperf2", duration=2, parallel=2)
    c = SideOutput(role="client", host="c", argv=["iperf", "-c", "10.0.0.1", "-p", "5001"], stdout=V22_CLIENT)
    s = SideOutput(role="server", host="s", argv=["iperf", "-s", "-p", "5001"], stdout=V22_SERVER)
    res = ENGINE.parse(wl, c, s)
    assert res.ok, res.error
    assert res.sender_bps == 24000000 and res.receiver_bps == 23700000  # the sum rows
    assert res.retransmits == 3
    assert res.max_cwnd == 310 * 1024  # tcpcwnd is in KB
    assert len(res.streams) == 2 and [x.retransmits for x in res.streams] == [1, 2]
    assert res.streams[0].rtt_mean_us == 250 and res.streams[0].rtt_min_us == 200 and res.streams[0].rtt_max_us == 300
    assert res.rtt_min_us == 200 and res.rtt_max_us == 500
    assert [iv.bps for iv in res.intervals] == [32000000, 16000000]  # from the sum rows
    assert [iv.retransmits for iv in res.intervals] == [3, 0]
    assert [iv.cwnd for iv in res.intervals] == [300 * 1024, 310 * 1024]
    assert res.intervals[0].rtt_us == pytest.approx((200 * 1 + 400 * 3) / 4)  # bytes-weighted


def test_legacy_enhanced_columns_without_header() -> None:
    rows, bad = parse_rows("20250101120000,10.0.0.2,40001,10.0.0.1,5001,3,0.0-1.0,1000,8000,8,0,5,64,150,10\n", udp=False)
    assert bad == 0 and rows[0].ext["tcpretry"] == 5 and rows[0].ext["tcprtt"] == 150 and rows[0].tid == 3


@pytest.mark.parametrize(
    "stdout",
    ["", "\n\n", "hello\nworld\n", "a,b,c,d,e,f,g,h,i\n", "2026,127.0.0.1,5\n", "\x00\xff,,,,,,,,,\n", "1,2,3,4,5,6,7-8-9,x,y\n"],
)
def test_garbage_gives_reason_not_exception(stdout: str) -> None:
    wl = Workload(engine="iperf2")
    res = ENGINE.parse(wl, SideOutput(role="client", host="c", argv=[], stdout=stdout), SideOutput(role="server", host="s", argv=[], stdout=stdout))
    assert isinstance(res, Result)
    assert not res.ok and res.error


def test_garbage_lines_among_rows_are_counted_not_fatal() -> None:
    wl, c, s, _ = load("tcp_p4")
    noisy = c.model_copy(update={"stdout": "WARNING: something\n" + c.stdout + "20261121,127.0.0.1,1\n"})
    res = ENGINE.parse(wl, noisy, s)
    assert res.ok and res.extra["unparsed_lines"]["client"] == 2


@pytest.mark.parametrize("mode", ["tcp_p4", "udp", "fullduplex"])
def test_truncated_output(mode: str) -> None:
    wl, c, s, _ = load(mode)
    half = c.stdout[: len(c.stdout) // 3]
    res = ENGINE.parse(wl, c.model_copy(update={"stdout": half}), s.model_copy(update={"stdout": ""}))
    assert not res.ok and res.error


def test_refused_is_an_error() -> None:
    wl, c, s, meta = load("refused")
    assert meta["client_exit_code"] == 0  # iperf2 exits 0 even so
    res = ENGINE.parse(wl, c, s)
    assert not res.ok and "Connection refused" in (res.error or "")
    assert not ENGINE.busy(c)


def test_server_done() -> None:
    for mode in MODES:
        wl, _, s, _ = load(mode)
        assert ENGINE.server_done(wl, s.stdout), mode
        first = s.stdout.splitlines(keepends=True)[0]
        assert not ENGINE.server_done(wl, first), mode
        assert not ENGINE.server_done(wl, "")
    assert not ENGINE.server_exits


# --- command lines --------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_fixture_argv_is_what_the_engine_builds(mode: str) -> None:
    wl, _, _, meta = load(mode)
    # These CSV fixtures were captured when nettune ran 2.1.8 with -y C; the engine now
    # builds that command line for the iperf2 whose CSV has the -e columns (2.2 on), and
    # the enhanced text one for 2.1.8 (tests/test_iperf2_text.py checks that one).
    assert meta["tool_version"] == "2.1.8"
    assert ENGINE.client_argv(wl, "127.0.0.1", meta["port"], "2.2.1") == meta["client_argv"]
    assert ENGINE.server_argv(wl, meta["port"], "2.2.1") == meta["server_argv"]


def _flag(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_server_argv() -> None:
    wl = Workload(engine="iperf2")
    life = ENGINE.server_lifetime(wl)
    assert ENGINE.server_argv(wl, 5001, "2.2.1") == ["iperf", "-s", "-p", "5001", "-y", "C", "-e", "-t", str(life)]
    # 2.1.8 ignores -e with -y C: enhanced text, exact units, intervals (the sender's with -R)
    assert ENGINE.server_argv(wl, 5001, "2.1.8") == ["iperf", "-s", "-p", "5001", "-e", "-f", "b", "-t", str(life), "-i", "1"]
    # -t bounds the server's life (it stops by itself if nettune dies) but never cuts the
    # test: the client is stopped after its budget, well before
    assert life > client_budget(wl) + 10
    assert ENGINE.server_lifetime(Workload(engine="iperf2", duration=100)) > client_budget(Workload(engine="iperf2", duration=100)) + 10
    a = ENGINE.server_argv(Workload(engine="iperf2", protocol="udp", window="4M", length=1400, congestion="bbr"), 5001, "2.1.8")
    assert "-u" in a and _flag(a, "-w") == "4M" and _flag(a, "-l") == "1400" and _flag(a, "-Z") == "bbr"


@pytest.mark.parametrize("mode", ["tcp_p4", "udp", "fullduplex"])
def test_another_hosts_connection_is_not_counted(mode: str) -> None:
    """A server without a key (UDP, -P > 1) also reports any other client it served:
    those rows (a port none of our client's rows has) are left out, with a warning."""
    wl, c, s, _ = load(mode)
    clean = ENGINE.parse(wl, c, s)
    rows, _ = parse_rows(s.stdout, wl.protocol == "udp")
    r = rows[0]
    port = _port_from_argv(s.argv)
    f = next(csv.reader(io.StringIO(s.stdout.splitlines()[0])))
    peer_col = 2 if r.dst_port == port else 4  # the client's port is the one that is not the server's
    f[peer_col] = "1"  # a port no client row has
    s2 = s.model_copy(update={"stdout": s.stdout + ",".join(f) + "\n"})
    res = ENGINE.parse(wl, c, s2)
    assert res.ok and res.receiver_bps == clean.receiver_bps and len(res.streams) == len(clean.streams)
    assert any("not from nettune's client" in w for w in res.warnings)
    assert not any("not from nettune's client" in w for w in clean.warnings)


def test_bind_and_permit_key_options() -> None:
    wl = Workload(engine="iperf2")
    s = ENGINE.server_argv(wl, 5001, "2.1.8", Access(bind="198.18.0.10", permit_key="k3y"))
    c = ENGINE.client_argv(wl, "198.18.0.10", 5001, "2.1.8", Access(bind="198.18.0.10", permit_key="k3y"))
    assert _flag(s, "-B") == "198.18.0.10" and "-B" not in c  # the client's source address is the kernel's choice
    # an optional argument: iperf 2.1.8 reads only --permit-key=VALUE (a separate word is not the key)
    assert "--permit-key=k3y" in s and "--permit-key=k3y" in c and "k3y" not in s[s.index("--permit-key=k3y") + 1:]
    assert _flag(s, "--permit-key-timeout") == str(ENGINE.server_lifetime(wl))
    assert ENGINE.client_env(Access(permit_key="k3y")) == {}
    assert "-B" not in ENGINE.server_argv(wl, 5001, "2.1.8", Access())
    assert ENGINE.permit_key_usable(wl) is None
    assert "TCP only" in (ENGINE.permit_key_usable(Workload(engine="iperf2", protocol="udp")) or "")
    assert "-P 2" in (ENGINE.permit_key_usable(Workload(engine="iperf2", parallel=2)) or "")


def test_client_argv() -> None:
    a = ENGINE.client_argv(Workload(engine="iperf2", duration=5, parallel=3), "10.0.0.1", 5001, "2.1.8")
    assert a[:3] == ["iperf", "-c", "10.0.0.1"]
    assert _flag(a, "-p") == "5001" and _flag(a, "-t") == "5" and _flag(a, "-P") == "3" and _flag(a, "-i") == "1"
    assert "-y" not in a and "-e" in a and _flag(a, "-f") == "b"  # 2.1.8: enhanced text
    assert _flag(ENGINE.client_argv(Workload(engine="iperf2"), "10.0.0.1", 5001, "2.2.1"), "-y") == "C"
    for f in ("-u", "-b", "-R", "--full-duplex", "-w", "-Z", "-l"):
        assert f not in a


@pytest.mark.parametrize(
    "opts,flag,value",
    [
        ({"protocol": "udp", "bitrate": "100M"}, "-b", "100000000"),  # bits/s: iperf2 would read "100M" as 100 * 2^20
        ({"protocol": "udp"}, "-u", None),
        ({"reverse": True}, "-R", None),
        ({"bidir": True}, "--full-duplex", None),
        ({"window": "4M"}, "-w", "4M"),
        ({"congestion": "cubic"}, "-Z", "cubic"),
        ({"length": "64K"}, "-l", "64K"),
    ],
)
def test_client_argv_options(opts: dict[str, Any], flag: str, value: str | None) -> None:
    a = ENGINE.client_argv(Workload(engine="iperf2", **opts), "127.0.0.1", 5001, "2.1.8")
    assert flag in a
    if value is not None:
        assert _flag(a, flag) == value


def test_congestion_with_reverse_goes_to_the_server_only() -> None:
    wl = Workload(engine="iperf2", reverse=True, congestion="cubic")  # 2.1.8: "-Z and --reverse cannot be applied together"
    assert "-Z" not in ENGINE.client_argv(wl, "127.0.0.1", 5001, "2.1.8")
    assert _flag(ENGINE.server_argv(wl, 5001, "2.1.8"), "-Z") == "cubic"


def test_warnings_omit_unsupported() -> None:
    wl, msgs = ENGINE.warnings(Workload(engine="iperf2", omit=2, parallel=500))
    assert wl.omit == 0 and wl.parallel == 500 and len(msgs) == 1 and "omit" in msgs[0]
    wl2, msgs2 = ENGINE.warnings(Workload(engine="iperf2", parallel=500))
    assert wl2.parallel == 500 and msgs2 == []  # no stream limit in iperf2


def test_misc_protocol() -> None:
    _, c, _, meta = load("tcp_p4")
    assert ENGINE.version(meta["version_output"]) == meta["tool_version"] == "2.1.8"
    assert ENGINE.version("iperf version 2.2.1 (22 October 2024) pthreads") == "2.2.1"
    assert ENGINE.version("bash: iperf: command not found") == ""
    assert ENGINE.version_argv() == ["iperf", "-v"]
    assert ENGINE.listen_proto(Workload(engine="iperf2", protocol="udp")) == "udp"
    assert ENGINE.listen_proto(Workload(engine="iperf2")) == "tcp"
    assert not ENGINE.busy(c)
    assert isinstance(get_engine("iperf2"), Iperf2Engine)
