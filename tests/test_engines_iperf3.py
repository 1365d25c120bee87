"""Iperf3Engine: command lines and the -J parser, on outputs captured from iperf3 3.12
over loopback (tests/fixtures/iperf3, made by tests/fixtures/capture.py). Expected values
come from re-reading the raw JSON, never from numbers typed here."""
from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from typing import Any

import pytest

from nettune.engines import ENGINES, get_engine
from nettune.engines.access import Access, iperf3_has_auth, users_line
from nettune.engines.iperf3 import MAX_STREAMS, Iperf3Engine, json_objects, load_json, parse_version
from nettune.engines.result import SideOutput
from nettune.engines.result import TestResult as Result
from nettune.studyfile.models import Workload

from fixtures_util import FIXTURES, close, load_capture

FIX = FIXTURES / "iperf3"
MODES = ["tcp_p4", "udp", "reverse", "bidir"]
ENGINE = Iperf3Engine()


def load(mode: str) -> tuple[Workload, SideOutput, SideOutput, dict[str, Any]]:
    return load_capture(FIX, mode)


def parsed(mode: str) -> tuple[Result, dict[str, Any], Workload, dict[str, Any]]:
    wl, c, s, meta = load(mode)
    return ENGINE.parse(wl, c, s), json.loads(c.stdout), wl, meta


# --- parsing real outputs -------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_fixture_parses_ok(mode: str) -> None:
    res, raw, wl, meta = parsed(mode)
    assert res.ok, res.error
    assert res.error is None
    assert res.engine == "iperf3"
    assert res.tool_version == meta["tool_version"] == parse_version(meta["version_output"])
    assert res.protocol == wl.protocol == raw["start"]["test_start"]["protocol"].lower()
    assert res.duration == float(wl.duration)


@pytest.mark.parametrize("mode", MODES)
def test_totals_are_the_end_sums(mode: str) -> None:
    res, raw, _, _ = parsed(mode)
    end = raw["end"]
    assert res.sender_bps == end["sum_sent"]["bits_per_second"]
    assert res.receiver_bps == end["sum_received"]["bits_per_second"]
    assert res.sender_bytes == end["sum_sent"]["bytes"]
    assert res.receiver_bytes == end["sum_received"]["bytes"]
    assert res.receiver_bps > 0
    if raw["start"]["test_start"]["protocol"] == "TCP":
        assert res.retransmits == end["sum_sent"]["retransmits"]
    assert res.tool_cpu == {k: float(v) for k, v in end["cpu_utilization_percent"].items()}
    assert res.tool_cpu["host_total"] > 0


@pytest.mark.parametrize("mode", MODES)
def test_streams_count_and_sum(mode: str) -> None:
    res, raw, wl, meta = parsed(mode)
    directions = ["forward", "reverse"] if wl.bidir else ["forward"]
    assert len(res.streams) == len(raw["start"]["connected"]) == meta["workload"]["parallel"] * len(directions)
    for d in directions:
        ss = [s for s in res.streams if s.direction == d]
        assert len(ss) == meta["workload"]["parallel"]
        total = res.receiver_bps if d == "forward" else res.reverse_receiver_bps
        assert close(sum(s.receiver_bps or 0 for s in ss), total), (d, [s.receiver_bps for s in ss], total)
        assert all((s.sender_bps or 0) > 0 for s in ss)
    assert len({s.id for s in res.streams}) == len(res.streams)


@pytest.mark.parametrize("mode", MODES)
def test_intervals_per_second(mode: str) -> None:
    res, raw, wl, _ = parsed(mode)
    for d in (["forward", "reverse"] if wl.bidir else ["forward"]):
        ivs = [iv for iv in res.intervals if iv.direction == d]
        assert abs(len(ivs) - wl.duration) <= 1
        assert len(ivs) == len(raw["intervals"])
        for iv in ivs:
            assert iv.end > iv.start and not iv.omitted
            assert len(iv.stream_bps) == wl.parallel
            assert close(sum(iv.stream_bps), iv.bps)
        assert [iv.start for iv in ivs] == sorted(iv.start for iv in ivs)


def test_tcp_sender_side_info() -> None:
    res, raw, _, _ = parsed("tcp_p4")
    snd = [s["sender"] for s in raw["end"]["streams"]]
    assert res.max_cwnd == max(s["max_snd_cwnd"] for s in snd) > 0
    assert res.rtt_min_us == min(s["min_rtt"] for s in snd)
    assert res.rtt_max_us == max(s["max_rtt"] for s in snd)
    assert res.rtt_min_us <= res.rtt_mean_us <= res.rtt_max_us
    assert sum(s.retransmits or 0 for s in res.streams) == raw["end"]["sum_sent"]["retransmits"]
    # per interval: retransmits add up to the interval sum, cwnd is the largest stream's
    for iv, rawiv in zip(res.intervals, raw["intervals"]):
        assert iv.retransmits == rawiv["sum"]["retransmits"]
        assert iv.cwnd == max(st["snd_cwnd"] for st in rawiv["streams"])
        assert iv.rtt_us is not None and min(st["rtt"] for st in rawiv["streams"]) <= iv.rtt_us <= max(st["rtt"] for st in rawiv["streams"])


def test_reverse_takes_sender_info_from_server_output() -> None:
    res, raw, _, _ = parsed("reverse")
    # iperf3 #1491: the client reports the remote sender's cwnd/RTT as 0 in reverse
    assert all(s["sender"]["max_snd_cwnd"] == 0 for s in raw["end"]["streams"])
    srv = [s["sender"] for s in raw["server_output_json"]["end"]["streams"]]
    assert res.max_cwnd == max(s["max_snd_cwnd"] for s in srv) > 0
    assert all((s.max_cwnd or 0) > 0 and s.rtt_mean_us for s in res.streams)
    assert res.rtt_min_us == min(s["min_rtt"] for s in srv)
    assert all(s.direction == "forward" for s in res.streams)
    assert all(iv.cwnd and iv.cwnd > 0 for iv in res.intervals)  # from the server's intervals


def test_reverse_falls_back_to_server_stdout_then_warns() -> None:
    wl, c, s, _ = load("reverse")
    doc = json.loads(c.stdout)
    doc.pop("server_output_json")
    c2 = c.model_copy(update={"stdout": json.dumps(doc)})
    res = ENGINE.parse(wl, c2, s)  # the server's own -J output has the same data
    assert res.ok and (res.max_cwnd or 0) > 0
    res = ENGINE.parse(wl, c2, s.model_copy(update={"stdout": ""}))
    assert res.ok and res.max_cwnd is None and res.receiver_bps == doc["end"]["sum_received"]["bits_per_second"]
    assert any("1491" in w for w in res.warnings)


def test_bidir_both_directions() -> None:
    res, raw, _, _ = parsed("bidir")
    end = raw["end"]
    assert res.receiver_bps and res.receiver_bps > 0
    assert res.reverse_receiver_bps and res.reverse_receiver_bps > 0
    assert res.reverse_sender_bps == end["sum_sent_bidir_reverse"]["bits_per_second"]
    assert res.reverse_receiver_bps == end["sum_received_bidir_reverse"]["bits_per_second"]
    assert res.reverse_retransmits == end["sum_sent_bidir_reverse"]["retransmits"]
    assert res.total_bps == res.receiver_bps + res.reverse_receiver_bps
    # server->client streams: cwnd/RTT are the server's (the client shows its receiving socket's)
    srv = {s["sender"]["socket"]: s["sender"] for s in raw["server_output_json"]["end"]["streams"] if s["sender"]["sender"]}
    rev = [s for s in res.streams if s.direction == "reverse"]
    assert sorted(s.max_cwnd for s in rev) == sorted(s["max_snd_cwnd"] for s in srv.values())
    assert res.extra["reverse"]["max_cwnd"] == max(s["max_snd_cwnd"] for s in srv.values())
    assert {iv.direction for iv in res.intervals} == {"forward", "reverse"}


def test_bidir_legacy_duplicate_keys() -> None:
    """3.7-3.10 wrote the reverse sums under the same keys, second; json.loads would keep
    only the second. Rebuild that layout from the 3.12 fixture and parse it."""
    wl, c, s, _ = load("bidir")
    new = ENGINE.parse(wl, c, s)
    legacy = c.stdout
    for k in ("sum_sent", "sum_received", "sum"):
        legacy = legacy.replace(f'"{k}_bidir_reverse"', f'"{k}"')
    assert legacy.count('"sum_sent"') > c.stdout.count('"sum_sent"')
    old = ENGINE.parse(wl, c.model_copy(update={"stdout": legacy}), s)
    assert old.ok, old.error
    for f in ("sender_bps", "receiver_bps", "reverse_sender_bps", "reverse_receiver_bps", "reverse_retransmits"):
        assert getattr(old, f) == getattr(new, f), f
    assert [iv.model_dump() for iv in old.intervals] == [iv.model_dump() for iv in new.intervals]
    doc, _ = load_json(legacy)
    assert doc and "sum_sent_bidir_reverse" in doc["end"]


def test_udp_loss_and_jitter() -> None:
    res, raw, _, _ = parsed("udp")
    recv = raw["end"]["sum_received"]
    assert res.packets == recv["packets"] > 0
    assert res.lost_packets == recv["lost_packets"]
    assert res.lost_percent == pytest.approx(100.0 * res.lost_packets / res.packets, abs=1e-6)
    assert res.jitter_ms == recv["jitter_ms"] and res.jitter_ms >= 0
    assert sum(s.packets or 0 for s in res.streams) == res.packets
    for s in res.streams:
        assert s.lost_percent == pytest.approx(100.0 * (s.lost_packets or 0) / (s.packets or 1), abs=1e-6)
        assert s.receiver_bytes and s.receiver_bytes > 0  # from the server's intervals
    assert all(iv.retransmits is None and iv.cwnd is None for iv in res.intervals)
    assert res.retransmits is None and res.max_cwnd is None


# --- failures never raise ---------------------------------------------------------------


@pytest.mark.parametrize(
    "stdout",
    [
        "",
        "   \n",
        "not json at all",
        "iperf3: error - unable to connect",
        "[1, 2, 3]",
        "{}",
        '{"start": {}, "intervals": [], "end": {}}',
        '{"end": {"sum_sent": "x", "sum_received": 5, "streams": [1, "a", {"sender": 3}]}, "intervals": [7, {"streams": "no"}]}',
        '{"end": {"sum_sent": {"bits_per_second": "fast"}, "streams": [{"sender": {"socket": null}}]}}',
        "\x00\xff{{{",
    ],
)
def test_garbage_gives_reason_not_exception(stdout: str) -> None:
    wl = Workload()
    res = ENGINE.parse(wl, SideOutput(role="client", host="c", argv=[], stdout=stdout), SideOutput(role="server", host="s", argv=[]))
    assert isinstance(res, Result)
    assert not res.ok and res.error


@pytest.mark.parametrize("mode", MODES)
def test_truncated_output(mode: str) -> None:
    wl, c, s, _ = load(mode)
    for cut in (0.1, 0.5, 0.95):
        t = c.model_copy(update={"stdout": c.stdout[: int(len(c.stdout) * cut)]})
        res = ENGINE.parse(wl, t, s)
        assert not res.ok and res.error and "JSON" in res.error


def test_refused_is_an_error() -> None:
    wl, c, s, _ = load("refused")
    res = ENGINE.parse(wl, c, s)
    assert not res.ok
    assert res.error == "iperf3: " + json.loads(c.stdout)["error"]
    assert "refused" in res.error.lower()
    assert not ENGINE.busy(c)


def test_busy_detected() -> None:
    wl, c, s, _ = load("busy")
    assert ENGINE.busy(c)
    res = ENGINE.parse(wl, c, s)
    assert not res.ok and "busy" in (res.error or "")
    stderr_only = SideOutput(role="client", host="c", argv=[], stderr="iperf3: error - the server is busy running a test. try again later\n")
    assert ENGINE.busy(stderr_only)
    for mode in MODES:
        assert not ENGINE.busy(load(mode)[1])
    assert not ENGINE.busy(SideOutput(role="client", host="c", argv=[], stdout="garbage"))


# --- command lines --------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_fixture_argv_is_what_the_engine_builds(mode: str) -> None:
    wl, _, _, meta = load(mode)
    assert ENGINE.client_argv(wl, "127.0.0.1", meta["port"], meta["tool_version"]) == meta["client_argv"]
    assert ENGINE.server_argv(wl, meta["port"], meta["tool_version"]) == meta["server_argv"]


def test_server_argv() -> None:
    wl = Workload()
    assert ENGINE.server_argv(wl, 5999, "3.12") == ["iperf3", "-s", "-1", "-J", "-p", "5999", "--idle-timeout", "30"]
    assert "--idle-timeout" not in ENGINE.server_argv(wl, 5999, "3.10.1")  # there it would not exit
    assert "--idle-timeout" not in ENGINE.server_argv(wl, 5999, "")
    assert "--idle-timeout" in ENGINE.server_argv(wl, 5999, "3.17.1")
    assert ENGINE.server_exits


def test_bind_and_authentication_options() -> None:
    wl = Workload()
    acc = Access(bind="198.18.0.10", user="u1", password="pw-secret", private_key="/d/private.pem", users_file="/d/users.csv", public_key="/e/public.pem")
    srv, cli = ENGINE.server_argv(wl, 5999, "3.12", acc), ENGINE.client_argv(wl, "198.18.0.10", 5999, "3.12", acc)
    assert srv[:6] == ["iperf3", "-s", "-1", "-J", "-p", "5999"]
    assert _flags(srv, "-B") == "198.18.0.10" and "-B" not in cli
    assert _flags(srv, "--rsa-private-key-path") == "/d/private.pem" and _flags(srv, "--authorized-users-path") == "/d/users.csv"
    assert _flags(cli, "--username") == "u1" and _flags(cli, "--rsa-public-key-path") == "/e/public.pem"
    assert not any("pw-secret" in a for a in srv + cli)  # the password is never a command-line word
    assert ENGINE.client_env(acc) == {"IPERF3_PASSWORD": "pw-secret"}
    assert "--use-pkcs1-padding" not in srv + cli
    assert "--use-pkcs1-padding" in ENGINE.server_argv(wl, 5999, "3.17", replace(acc, server_pkcs1=True))
    assert "--use-pkcs1-padding" in ENGINE.client_argv(wl, "x", 5999, "3.17", replace(acc, client_pkcs1=True))
    bound = Access(bind="127.0.0.1")  # no credentials: binding only
    assert ENGINE.client_env(bound) == {} and "--username" not in ENGINE.client_argv(wl, "127.0.0.1", 5999, "3.12", bound)
    assert "--rsa-private-key-path" not in ENGINE.server_argv(wl, 5999, "3.12", bound)


def test_users_file_and_feature_detection() -> None:
    # the hash the iperf3 manual gives for user mario, password rossi
    assert users_line("mario", "rossi") == "mario,bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b"
    _, _, _, meta = load("tcp_p4")
    real = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout if shutil.which("iperf3") else meta["version_output"]
    assert iperf3_has_auth(real) == ("authentication" in real.split("Optional features available:")[-1])
    assert not iperf3_has_auth("iperf 3.12 (cJSON 1.7.15)\nOptional features available: CPU affinity setting, IPv6 flow label")
    assert not iperf3_has_auth("iperf 3.0.11\nLinux x")


def test_taken_only_when_the_server_ended_on_another_connection() -> None:
    """Outputs as 3.12 printed them when a connection that sent nothing ended the
    one-off server before our client (measured on this machine)."""
    refused = SideOutput(role="client", host="c", argv=[], stdout='{"start": {"connected": []}, "intervals": [], "end": {}, "error": "unable to connect to server: Connection refused"}')
    ended = SideOutput(role="server", host="s", argv=[], stdout='{"start": {"connected": []}, "intervals": [], "end": {}, "error": "error - unable to receive parameters from client: "}\n')
    assert ENGINE.taken(refused, ended)
    assert ENGINE.taken(None, ended)  # ended before our client started
    assert not ENGINE.taken(refused, ended.model_copy(update={"stdout": ""}))  # nothing ended it: a real failure
    auth_failed = ended.stdout.replace("unable to receive parameters from client: ", "test authorization failed")
    assert not ENGINE.taken(None, ended.model_copy(update={"stdout": auth_failed}))  # iperf3 does not count that one
    _, c, s, _ = load("refused")
    assert not ENGINE.taken(c, s)  # no server at all
    for mode in MODES:
        _, c, s, _ = load(mode)
        assert not ENGINE.taken(c, s)


def test_server_output_after_a_refused_client_is_the_last_object() -> None:
    """A one-off server that refused an unauthenticated client first prints that error
    object, then its test's: the fallback takes the test's."""
    wl, c, s, _ = load("reverse")
    doc = json.loads(c.stdout)
    doc.pop("server_output_json")
    intruder = '{"start": {"connected": []}, "intervals": [], "end": {}, "error": "error - test authorization failed"}\n'
    res = ENGINE.parse(wl, c.model_copy(update={"stdout": json.dumps(doc)}), s.model_copy(update={"stdout": intruder + s.stdout}))
    assert res.ok and (res.max_cwnd or 0) > 0
    assert len(json_objects(intruder + s.stdout)) == 2


def _flags(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_client_argv_basics() -> None:
    a = ENGINE.client_argv(Workload(duration=7, parallel=3), "10.0.0.1", 6000, "3.12")
    assert a[:3] == ["iperf3", "-c", "10.0.0.1"]
    assert _flags(a, "-p") == "6000" and _flags(a, "-t") == "7" and _flags(a, "-P") == "3"
    assert "-J" in a and "--get-server-output" in a
    for f in ("-u", "-b", "-R", "--bidir", "-O", "-w", "-C", "-l"):
        assert f not in a


@pytest.mark.parametrize(
    "opts,flag,value",
    [
        ({"protocol": "udp", "bitrate": "100M"}, "-b", "100000000"),  # bits/s (spec.rates)
        ({"protocol": "udp"}, "-u", None),
        ({"bitrate": "2G"}, "-b", "2000000000"),
        ({"reverse": True}, "-R", None),
        ({"bidir": True}, "--bidir", None),
        ({"omit": 2}, "-O", "2"),
        ({"window": "4M"}, "-w", "4M"),
        ({"congestion": "bbr"}, "-C", "bbr"),
        ({"length": "64K"}, "-l", "64K"),
        ({"length": 1400}, "-l", "1400"),
    ],
)
def test_client_argv_options(opts: dict[str, Any], flag: str, value: str | None) -> None:
    a = ENGINE.client_argv(Workload(**opts), "127.0.0.1", 5201, "3.12")
    assert flag in a
    if value is not None:
        assert _flags(a, flag) == value


def test_listen_proto_is_tcp_control_connection() -> None:
    assert ENGINE.listen_proto(Workload(protocol="udp")) == "tcp"
    assert ENGINE.listen_proto(Workload()) == "tcp"


def test_warnings_clip_parallel() -> None:
    wl, msgs = ENGINE.warnings(Workload(parallel=160))
    assert wl.parallel == MAX_STREAMS == 128
    assert msgs == ["iperf3 allows at most 128 streams (-P); asked for 160, ran 128"]
    assert "128" == _flags(ENGINE.client_argv(wl, "127.0.0.1", 5201, "3.12"), "-P")
    wl2, msgs2 = ENGINE.warnings(Workload(parallel=128))
    assert wl2.parallel == 128 and msgs2 == []


def test_version() -> None:
    _, _, _, meta = load("tcp_p4")
    assert ENGINE.version(meta["version_output"]) == "3.12"
    assert ENGINE.version("iperf 3.17.1+ (cJSON 1.7.15)") == "3.17.1"
    assert ENGINE.version("iperf 3.9\nLinux x 5.4") == "3.9"
    assert ENGINE.version("command not found") == ""
    assert ENGINE.version_argv() == ["iperf3", "--version"]


def test_registry() -> None:
    assert isinstance(get_engine("iperf3"), Iperf3Engine)
    assert set(ENGINES) == {"iperf3", "iperf2", "command"}
    for name, e in ENGINES.items():
        assert e.name == name and e.binary and e.install_hint
    with pytest.raises(ValueError, match="iperf3"):
        get_engine("netperf")
