"""What nettune reads from iperf against iperf's own summary lines (a differential hunt).

Each fixture is a real iperf3 3.12 / iperf 2.1.8 output captured on loopback (its command
lines and version in meta.json beside it). The expected numbers are read from the file by
the small readers here, which share no code with nettune's parsers; each test was run
against the code before its fix and failed there.
"""
from __future__ import annotations

import re
from pathlib import Path

from nettune.importers import read_files

from fixtures_util import FIXTURES

I3, I2 = FIXTURES / "iperf3", FIXTURES / "iperf2"


def one(path: Path):
    [(_, res, why, _)] = read_files([path], {})
    assert res is not None, why
    return res


_BITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}
_BYTES = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_I3_FINAL = re.compile(r"^\[(?:SUM|\s*\d+)\](?:\[(?P<role>..-.)\])?\s+\S+\s+sec\s+\S+ \S+\s+(?P<v>[\d.]+) (?P<u>[KMG]?)(?P<k>bits|Bytes)/sec(?P<rest>.*)(?P<end>sender|receiver)$")
_UDP = re.compile(r"(?P<j>[\d.]+) ms\s+(?P<l>\d+)/(?P<t>\d+)")


def i3_finals(path: Path) -> list[dict]:
    """iperf3 text: the lines after the last '- - -' ending in sender/receiver."""
    lines = path.read_text().splitlines()
    cut = max(i for i, ln in enumerate(lines) if ln.startswith("- - -"))
    out = []
    for ln in lines[cut + 1:]:
        m = _I3_FINAL.match(ln.strip())
        if m:
            bps = float(m["v"]) * (_BITS[m["u"]] if m["k"] == "bits" else 8 * _BYTES[m["u"]])
            u = _UDP.search(m["rest"])
            out.append({"role": m["role"], "end": m["end"], "bps": bps, "sum": ln.startswith("[SUM]"),
                        "udp": (float(u["j"]), int(u["l"]), int(u["t"])) if u else None})
    return out


# --- iperf3 text ------------------------------------------------------------------------------

def test_iperf3_text_bidir_udp_keeps_the_reverse_directions_jitter_and_loss():
    """The [RX-C] receiver line holds the server->client jitter and loss; the reader kept
    them for the forward direction only (the -J reader keeps both)."""
    path = I3 / "text_udp_bidir" / "client.stdout"
    res = one(path)
    rx = next(f for f in i3_finals(path) if f["role"] == "RX-C" and f["end"] == "receiver")
    tx = next(f for f in i3_finals(path) if f["role"] == "TX-C" and f["end"] == "receiver")
    assert res.reverse is not None
    assert (res.reverse.jitter_ms, res.reverse.lost_packets, res.reverse.packets) == rx["udp"]
    assert (res.jitter_ms, res.lost_packets, res.packets) == tx["udp"]
    assert res.reverse.lost_percent == 100.0 * rx["udp"][1] / rx["udp"][2]
    assert res.reverse_receiver_bps == rx["bps"] and res.reverse.receiver_bytes and res.reverse.sender_bytes


def test_iperf3_text_bidir_tcp_keeps_the_reverse_directions_bytes():
    path = I3 / "text_bidir" / "client.stdout"
    res = one(path)
    assert res.reverse is not None and res.reverse.sender_bytes and res.reverse.receiver_bytes
    assert res.reverse.jitter_ms is None and res.reverse.packets is None  # TCP: no loss to tell


def test_iperf3_text_rates_in_bytes_per_second_are_read():
    """iperf3 -f K prints rates as 'KBytes/sec' (1024 bytes); the client's log was refused as
    no iperf output at all, with a hint to import it as a table."""
    for mode in ("text_format_K", "text_udp_format_K"):
        path = I3 / mode / "client.stdout"
        res = one(path)
        finals = [f for f in i3_finals(path) if f["role"] is None]
        snd = next(f for f in finals if f["end"] == "sender")
        rcv = next(f for f in finals if f["end"] == "receiver")
        assert (res.sender_bps, res.receiver_bps) == (snd["bps"], rcv["bps"])
        assert 1e6 < res.receiver_bps < 1e12  # bits/s, not KBytes/s
        assert all(iv.bps > 0 for iv in res.intervals)


# --- iperf2 text ------------------------------------------------------------------------------

_I2_ROW = re.compile(r"^\[\s*(?P<id>\*?\d+|SUM)\]\s+0\.0+-(?P<b>[\d.]+) sec\s+[\d.]+ [KMG]?Bytes\s+(?P<v>[\d.]+) (?P<u>[KMG]?)(?P<k>bits|Bytes)/sec(?P<rest>.*)$")


def i2_finals(path: Path) -> dict[tuple[str, bool], dict]:
    """iperf2 text: each id's row from 0 to its largest end; relayed 'Server Report:' rows apart."""
    out: dict[tuple[str, bool], dict] = {}
    relay = False
    for ln in path.read_text().splitlines():
        if "Server Report:" in ln:
            relay = True
            continue
        m = _I2_ROW.match(ln.strip())
        if not m:
            continue
        u = _UDP.search(m["rest"])
        row = {"end": float(m["b"]), "bps": float(m["v"]) * (_BITS[m["u"]] if m["k"] == "bits" else 8 * _BYTES[m["u"]]),
               "udp": (float(u["j"]), int(u["l"]), int(u["t"])) if u else None}
        key = (m["id"], relay)
        if key not in out or row["end"] >= out[key]["end"]:
            out[key] = row
        relay = False
    return out


def test_iperf2_udp_dualtest_client_log_without_L_is_read():
    """-d without -L: the client's listener has the server's port number. Its log was refused
    ("1 stream(s) have no server report": the stream it received has none, rightly)."""
    path = I2 / "text_udp_dualtest" / "client.stdout"
    res = one(path)
    f = i2_finals(path)
    sent, relayed, back = f[("1", False)], f[("1", True)], f[("2", False)]
    assert (res.sender_bps, res.receiver_bps) == (sent["bps"], relayed["bps"])
    assert (res.jitter_ms, res.lost_packets, res.packets) == relayed["udp"]
    assert res.reverse_receiver_bps == back["bps"] and res.reverse_sender_bps is None  # the server's send is not in this log
    assert res.reverse is not None and (res.reverse.jitter_ms, res.reverse.lost_packets, res.reverse.packets) == back["udp"]


def test_iperf2_udp_dualtest_server_log_keeps_the_two_directions_apart():
    """The server's log of the same test: its connection back was read as a second forward
    stream (receiver 105 Mbit/s: both directions added, the reverse's relayed loss lost)
    and the client's sending rate was copied from the server's receiving one."""
    path = I2 / "text_udp_dualtest" / "server.stdout"
    res = one(path)
    f = i2_finals(path)
    got, sent_back, relayed = f[("1", False)], f[("*2", False)], f[("*2", True)]
    assert res.receiver_bps == got["bps"] and (res.jitter_ms, res.lost_packets, res.packets) == got["udp"]
    assert res.sender_bps is None and res.sender_bytes is None  # the client's send is not in a server log
    assert [s.direction for s in res.streams].count("forward") == 1
    assert (res.reverse_sender_bps, res.reverse_receiver_bps) == (sent_back["bps"], relayed["bps"])
    assert res.reverse is not None and (res.reverse.jitter_ms, res.reverse.lost_packets, res.reverse.packets) == relayed["udp"]
    assert res.total_bps == got["bps"] + relayed["bps"]


def refusal(path: Path) -> str:
    [(_, res, why, _)] = read_files([path], {})
    assert res is None and "\n" not in why and why.startswith(str(path)), why
    return why


def test_iperf2_udp_reverse_server_log_is_refused_not_copied():
    """The server's log of a UDP -R test has only what it sent: its rate was stored as the
    receiver's, with no loss and no jitter."""
    assert "sender's report only" in refusal(I2 / "text_udp_reverse" / "server.stdout")
    res = one(I2 / "text_udp_reverse" / "client.stdout")  # the receiver's log is read
    rcv = i2_finals(I2 / "text_udp_reverse" / "client.stdout")[("*1", False)]
    assert res.receiver_bps == rcv["bps"] and (res.jitter_ms, res.lost_packets, res.packets) == rcv["udp"]


def test_iperf2_udp_full_duplex_logs_keep_each_sides_own_numbers():
    """UDP --full-duplex: the client's log was read with its sending rate as the forward
    receiver's (no loss) and the server's with its sending rate as the reverse receiver's;
    now the client's (no receiver of the main direction in it) is refused and the server's
    keeps what it received (forward) and what it sent (reverse), nothing copied."""
    assert "sender's report only" in refusal(I2 / "text_udp_fullduplex" / "client.stdout")
    path = I2 / "text_udp_fullduplex" / "server.stdout"
    res = one(path)
    f = i2_finals(path)
    got, sent = f[("1", False)], f[("*1", False)]
    assert res.receiver_bps == got["bps"] and (res.jitter_ms, res.lost_packets, res.packets) == got["udp"]
    assert res.sender_bps is None and res.reverse_sender_bps == sent["bps"] and res.reverse_receiver_bps is None
    assert res.reverse is not None and res.reverse.receiver_bytes is None and res.reverse.packets is None


def test_iperf2_udp_full_duplex_server_csv_is_two_directions():
    """2.1.8's server CSV of UDP --full-duplex: its send row (datagrams -1, written the other
    way round) was taken for a 2.0.x relayed report, and stored as the forward sender (its
    bytes below the receiver's)."""
    path = I2 / "csv_udp_fullduplex" / "server.csv"
    res = one(path)
    rows = [ln.split(",") for ln in path.read_text().splitlines() if ",0.0-2.0," in ln]
    got = next(r for r in rows if int(r[11]) >= 0)
    sent = next(r for r in rows if int(r[11]) < 0)
    assert (res.receiver_bps, res.receiver_bytes) == (float(got[8]), int(got[7])) and res.packets == int(got[11])
    assert res.sender_bps is None and res.reverse_sender_bps == float(sent[8]) and res.reverse_receiver_bps is None
    assert sorted(s.direction for s in res.streams) == ["forward", "reverse"]


def test_iperf2_csv_stream_that_ended_late_is_not_a_cut_off_report():
    """2.1.8 -P 4 -y C: one stream's last write finished after 2 s (its rows 2.0-3.0 and a
    0.0-3.0 final); the whole client report was refused as cut off."""
    path = I2 / "csv_p4_straggler" / "client.csv"
    res = one(path)
    finals = {}
    for r in (ln.split(",") for ln in path.read_text().splitlines()):
        a, b = (float(x) for x in r[6].split("-"))
        if a == 0 and b >= finals.get(r[5], (0.0,))[0]:
            finals[r[5]] = (b, float(r[8]), int(r[7]))
    assert len(finals) == 4 and len(res.streams) == 4
    assert sorted(s.sender_bps for s in res.streams) == sorted(f[1] for f in finals.values())
    assert res.sender_bytes == sum(f[2] for f in finals.values())


def test_iperf2_text_rates_in_bytes_per_second_are_read():
    """iperf 2.1.8 -f K prints 'KBytes/sec' (1024 bytes): both sides' logs were refused as
    no iperf output at all."""
    path = I2 / "text_format_K" / "client.stdout"
    res = one(path)
    f = i2_finals(path)
    assert res.sender_bps == f[("SUM", False)]["bps"]  # iperf2's own total
    assert sorted(s.sender_bps for s in res.streams) == sorted(f[(i, False)]["bps"] for i in ("1", "2"))
    path = I2 / "text_udp_format_K" / "server.stdout"
    res = one(path)
    got = i2_finals(path)[("1", False)]
    assert res.receiver_bps == got["bps"] and (res.jitter_ms, res.lost_packets, res.packets) == got["udp"]
    assert 1e6 < res.receiver_bps < 1e9  # bits/s (-b 10M), not KBytes/s


def test_iperf2_text_connection_line_before_the_banner_is_the_clients_own():
    """With -P the client printed stream 2's connection line before its 'Client connecting
    to' banner: that stream was read as received (the other way), so the side's [SUM], iperf2's
    total, was dropped for a sum of the streams' rates."""
    path = I2 / "text_format_K" / "client.stdout"
    assert path.read_text().splitlines()[0].startswith("[  2] local")
    from nettune.engines.iperf2_enhanced import parse_text_rows
    rows, unplaced = parse_text_rows(path.read_text())
    assert unplaced == 0 and {r.direction for r in rows if r.tid >= 0} == {"c2s"}
    assert any(r.tid < 0 for r in rows)  # the [SUM] rows are kept


def test_total_of_a_bidir_log_without_the_other_directions_receiver_is_unknown():
    """A server's log of an iperf3 --bidir test has what it received and what it sent, not
    what the client received: the total was the main direction alone (3.06 Gbit/s of a test
    that moved 3.06 + 11.3), now unknown."""
    res = one(I3 / "text_bidir" / "server.stdout")
    assert res.receiver_bps and res.reverse_sender_bps and res.reverse_receiver_bps is None
    assert res.total_bps is None
    both = one(I3 / "text_bidir" / "client.stdout")  # the client's log has both receivers
    assert both.total_bps == both.receiver_bps + both.reverse_receiver_bps


def test_iperf3_text_with_timestamps_is_read():
    """iperf3 --timestamps puts 'Sat Nov 28 01:37:22 2026 ' before every line: the log was
    refused as no iperf output, with a hint to import it as a table."""
    path = I3 / "text_timestamps" / "client.stdout"
    res = one(path)
    finals = i3_finals_from("\n".join(ln[25:] for ln in path.read_text().splitlines()))
    assert (res.sender_bps, res.receiver_bps) == (finals["sender"], finals["receiver"])
    assert any("--timestamps" in w for w in res.warnings)


def i3_finals_from(text: str) -> dict[str, float]:
    out = {}
    for ln in text.splitlines():
        m = _I3_FINAL.match(ln.strip())
        if m:
            out[m["end"]] = float(m["v"]) * (_BITS[m["u"]] if m["k"] == "bits" else 8 * _BYTES[m["u"]])
    return out


def test_iperf2_dualtest_client_log_with_L_is_not_read_as_a_servers():
    """-d -L: the client's log opens with 'Server listening on TCP port L', as a server's
    does. It was read as a server's log: the two directions swapped (TCP), and for UDP the
    stream it received stored as the main direction's."""
    path = I2 / "text_dualtest_L" / "client.stdout"
    res = one(path)
    f = i2_finals(path)
    text = path.read_text()
    port = re.search(r"Client connecting to \S+, TCP port (\d+)", text)[1]
    # the connection the client opened: the one to the server's port
    own = re.search(r"^\[\s*(\d+)\] local \S+ port \d+ connected with \S+ port " + port + r"\b", text, re.M)[1]
    other = next(k[0] for k in f if k[0] != own and not k[1])
    assert res.sender_bps == f[(own, False)]["bps"] and res.reverse_receiver_bps == f[(other, False)]["bps"]
    path = I2 / "text_udp_dualtest_L" / "client.stdout"
    res = one(path)
    f = i2_finals(path)
    assert res.sender_bps == f[("1", False)]["bps"] and (res.jitter_ms, res.lost_packets, res.packets) == f[("1", True)]["udp"]
    assert res.reverse_receiver_bps == f[("2", False)]["bps"] and res.reverse is not None
    assert (res.reverse.jitter_ms, res.reverse.lost_packets, res.reverse.packets) == f[("2", False)]["udp"]


def test_iperf2_text_tradeoff_says_the_directions_ran_one_after_the_other():
    """-r in text: like the CSV reader, say that the total adds rates of different times
    (the text reader said nothing, -r read as -d)."""
    for side in ("client", "server"):
        res = one(I2 / "text_tradeoff_L" / f"{side}.stdout")
        assert res.reverse_receiver_bps and any("one after the other" in w for w in res.warnings)
    res = one(I2 / "text_dualtest_L" / "client.stdout")
    assert not any("one after the other" in w for w in res.warnings)


def test_iperf3_text_verbose_keeps_the_tools_cpu_line():
    """-V prints iperf3's own CPU figures (the -J log's cpu_utilization_percent): they were
    left out of a text import."""
    path = I3 / "text_verbose" / "client.stdout"
    res = one(path)
    m = re.search(r"local/\w+ ([\d.]+)% \(([\d.]+)%u/([\d.]+)%s\), remote/\w+ ([\d.]+)% \(([\d.]+)%u/([\d.]+)%s\)", path.read_text())
    want = dict(zip(("host_total", "host_user", "host_system", "remote_total", "remote_user", "remote_system"), map(float, m.groups())))
    assert res.tool_cpu == want
    assert one(I3 / "text_tcp_p4" / "client.stdout").tool_cpu == {}  # no -V: nothing to tell


def test_iperf2_text_cut_after_a_connection_line_is_refused(tmp_path):
    """A -r client log cut after the second direction's connection line (before any of its
    report lines) was imported as a complete test of the first direction alone (found by
    cutting the saved -r log at every line end, as tests/test_bad_import.py does)."""
    whole = (I2 / "text_tradeoff_L" / "client.stdout").read_text()
    lines = whole.splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if "port 27507 connected with" in ln)
    cut = tmp_path / "cut.out"
    cut.write_text("".join(lines[:at + 2]))  # the connection line and its [ ID] header
    assert "cut off: 1 connection(s) have no report line" in refusal(cut)
    assert one(I2 / "text_tradeoff_L" / "client.stdout").receiver_bps  # the whole log is still read
    # cut after the first direction's final line, before the connection back: a whole-looking
    # one-way test, told by the listener the log opens with (CI's hypothesis run found it)
    done = next(i for i, ln in enumerate(lines) if "0.0000-2.0324" in ln)
    cut.write_text("".join(lines[:done + 1]))
    assert "with one direction's report only" in refusal(cut)  # every line end: tests/test_bad_import.py
