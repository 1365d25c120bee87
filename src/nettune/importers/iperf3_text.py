"""iperf3's human-readable output (no -J): the client's or the server's, any mode (-P with
[SUM] lines, -R, --bidir with [TX-C]/[RX-C] roles, UDP with jitter and loss, -O), and files
holding several tests one after the other (a script that appended them, study A).

nettune never runs iperf3 without -J, so this reader exists for logs only. What the text
looks like (iperf3 3.12, tests/fixtures/iperf3/text_*): a "[  5] local A port X connected
to B port Y" line per stream; interval lines "[  5]   0.00-1.00   sec  1.67 GBytes  14.4
Gbits/sec  <extras>" ("(omitted)" at the end of -O's); after the last "- - -" line the final
lines, each ending in "sender" or "receiver". Bytes units are powers of 1024, bits powers
of 1000, three significant digits: rates read from text are that precise.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..engines.result import Interval, StreamResult, TestResult
from ..record.parts import ReverseDirection
from ..engines.streams import total
from ..errors import NettuneError
from .base import Hints, ImporterBase, side, workload

_BYTES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_BITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
LINE = re.compile(
    r"^\[\s*(?P<id>\d+|SUM)\](?:\[(?P<role>[TR]X-[CS])\])?\s+(?P<a>\d+\.\d{2})-(?P<b>\d+\.\d{2})\s+sec\s+"
    r"(?P<x>\d+(?:\.\d+)?)\s+(?P<xu>[KMGT]?)Bytes\s+(?P<y>\d+(?:\.\d+)?)\s+(?P<yu>[KMGT]?)(?P<yk>bits|Bytes)/sec(?P<rest>.*)$"
)
CONNECTED = re.compile(r"^\[\s*(?P<id>\d+)\]\s+local\s+\S+\s+port\s+\d+\s+connected to\s+\S+\s+port\s+\d+")
START = re.compile(r"^(Connecting to host |Accepted connection from )")
ERROR = re.compile(r"^iperf3: (error - .*)$")
# -V: "CPU Utilization: local/sender 27.8% (0.4%u/27.4%s), remote/receiver 33.8% (0.6%u/33.3%s)"
CPU = re.compile(r"CPU Utilization: local/\w+ (?P<ht>[\d.]+)% \((?P<hu>[\d.]+)%u/(?P<hs>[\d.]+)%s\), "
                 r"remote/\w+ (?P<rt>[\d.]+)% \((?P<ru>[\d.]+)%u/(?P<rs>[\d.]+)%s\)")
UDP_LOSS = re.compile(r"(?P<j>\d+(?:\.\d+)?)\s+ms\s+(?P<l>-?\d+)/(?P<t>\d+)\s+\((?P<p>[-\d.eE+]+)%\)")
TCP_SENDER = re.compile(r"^\s*(?P<retr>\d+)(?:\s+(?P<cw>\d+(?:\.\d+)?)\s+(?P<cwu>[KMGT]?)Bytes)?")


@dataclass
class _Line:
    sid: str  # "5" or "SUM"
    forward: bool
    start: float
    end: float
    nbytes: int
    bps: float
    rest: str
    final: str = ""  # "sender" / "receiver" on the summary lines
    omitted: bool = False


@dataclass
class _Doc:
    client: bool
    reverse: bool = False
    bidir: bool = False
    udp: bool = False
    streams: list[str] = field(default_factory=list)
    lines: list[_Line] = field(default_factory=list)
    error: str = ""
    done: bool = False
    cpu: dict[str, float] = field(default_factory=dict)  # -V's CPU line, as -J's cpu_utilization_percent


def _parse(text: str) -> _Doc:
    doc = _Doc(client="Connecting to host" in text)
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith("Reverse mode"):
            doc.reverse = True
        if line.strip() == "iperf Done.":
            doc.done = True
        if m := ERROR.match(line):
            doc.error = doc.error or m[1]
        if m := CPU.search(line):
            names = {"ht": "host_total", "hu": "host_user", "hs": "host_system", "rt": "remote_total", "ru": "remote_user", "rs": "remote_system"}
            doc.cpu = {names[k]: float(v) for k, v in m.groupdict().items()}
        if m := CONNECTED.match(line):
            doc.streams.append(m["id"])
            continue
        m = LINE.match(line)
        if m is None:
            continue
        role = m["role"]
        if role:
            doc.bidir = True
        # the main direction: client->server, or server->client with -R; with --bidir
        # the client's TX and the server's RX are the main one
        forward = role is None or role in ("TX-C", "RX-S")
        rest = m["rest"]
        final = next((w for w in ("sender", "receiver") if rest.rstrip().endswith(w)), "")
        doc.udp = doc.udp or bool(final and UDP_LOSS.search(rest))
        doc.lines.append(_Line(m["id"], forward, float(m["a"]), float(m["b"]), int(round(float(m["x"]) * _BYTES[m["xu"]])),
                               _rate(m["y"], m["yu"], m["yk"]), rest, final, "(omitted)" in rest))
    return doc


# iperf3 --timestamps' default stamp (strftime "%c "): "Sat Nov 28 01:37:22 2026 "
STAMP = re.compile(r"^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d \d{4} ", re.M)


def unstamped(text: str) -> str:
    """The text without iperf3 --timestamps' default stamps (the same lines, in place); a
    stamp of another --timestamps=FORMAT is not guessed at."""
    return STAMP.sub("", text) if STAMP.match(text.lstrip("\ufeff")) else text


def _rate(value: str, unit: str, kind: str) -> float:
    """bits/s of a printed rate: -f k/m/g/t (the default) print bits, powers of 1000; -f
    K/M/G/T print bytes, powers of 1024 ("1140827 KBytes/sec" is 9.35 Gbit/s)."""
    return float(value) * (_BITS[unit] if kind == "bits" else 8 * _BYTES[unit])


def _check(path: Path, text: str, doc: _Doc) -> None:
    """A report cut off anywhere is refused: the client's ends with "iperf Done.", and every
    stream (and, with several, their [SUM]) has its final line in each direction."""
    if doc.error and not any(ln.final for ln in doc.lines):
        raise NettuneError(f"{path}: iperf3 reported {doc.error}")
    if not text.rstrip(" \t").endswith("\n"):
        raise NettuneError(f"{path}: cut off: the last line has no newline at its end (if the file is complete, add one)")
    if doc.client and not doc.done:
        raise NettuneError(f"{path}: cut off: no \"iperf Done.\" line after the client's report")
    finals = [ln for ln in doc.lines if ln.final]
    if not finals:
        raise NettuneError(f"{path}: cut off: no final sender/receiver lines")
    for forward in (True, False):
        ids = {ln.sid for ln in doc.lines if ln.forward == forward and ln.sid != "SUM"}
        done = {ln.sid for ln in finals if ln.forward == forward}
        if ids - done:
            raise NettuneError(f"{path}: cut off: stream(s) {', '.join(sorted(ids - done))} have no final line")
        if len(ids) > 1 and "SUM" not in done:
            raise NettuneError(f"{path}: cut off: the final [SUM] line is missing")
    if doc.client:
        for forward in (True, False):
            kinds = [{ln.final for ln in finals if ln.forward == forward and ln.sid == s} for s in {ln.sid for ln in finals if ln.forward == forward}]
            if any(k != {"sender", "receiver"} for k in kinds):
                raise NettuneError(f"{path}: cut off: a stream's final sender or receiver line is missing")


def _read(doc: _Doc) -> TestResult:
    res = TestResult(engine="iperf3", protocol="udp" if doc.udp else "tcp")
    finals = [ln for ln in doc.lines if ln.final]
    res.duration = max((ln.end for ln in finals), default=None)
    for forward in (True, False):
        mine = [ln for ln in finals if ln.forward == forward]
        if not mine:
            continue
        label = "forward" if forward else "reverse"
        ids = sorted({ln.sid for ln in mine if ln.sid != "SUM"}, key=int)
        ivals = [ln for ln in doc.lines if not ln.final and ln.forward == forward]
        streams = [_stream(sid, label, [ln for ln in mine if ln.sid == sid], [ln for ln in ivals if ln.sid == sid]) for sid in ids]
        summ = {ln.final: ln for ln in mine if ln.sid == "SUM"}
        snd, rcv = summ.get("sender"), summ.get("receiver")
        sender_bps = snd.bps if snd else total(s.sender_bps for s in streams)
        receiver_bps = rcv.bps if rcv else total(s.receiver_bps for s in streams)
        retr = [s.retransmits for s in streams if s.retransmits is not None]
        sent_bytes = snd.nbytes if snd else total(s.sender_bytes for s in streams)
        got_bytes = rcv.nbytes if rcv else total(s.receiver_bytes for s in streams)
        loss = _udp_loss(streams) if doc.udp else {}
        if forward:
            res.sender_bps, res.receiver_bps = sender_bps, receiver_bps
            res.sender_bytes, res.receiver_bytes = sent_bytes, got_bytes  # type: ignore[assignment]
            res.retransmits = sum(retr) if retr and not doc.udp else None
            cw = [s.max_cwnd for s in streams if s.max_cwnd]
            res.max_cwnd = max(cw) if cw else None
            for k, v in loss.items():
                setattr(res, k, v)
        else:
            res.reverse_sender_bps, res.reverse_receiver_bps = sender_bps, receiver_bps
            res.reverse_retransmits = sum(retr) if retr and not doc.udp else None
            # the other direction's bytes and UDP loss, as the -J reader keeps them
            res.reverse = ReverseDirection(sender_bytes=sent_bytes, receiver_bytes=got_bytes, **loss)  # type: ignore[arg-type]
        res.streams += streams
        res.intervals += _intervals(ivals, ids, label, doc.udp)
    res.tool.num_streams = len({ln.sid for ln in finals if ln.sid != "SUM" and ln.forward})
    res.tool_cpu = dict(doc.cpu)
    return res


def _udp_loss(streams: list[StreamResult]) -> dict[str, float | int]:
    """A direction's UDP receiver numbers from its streams' final receiver lines: the counts
    summed, the loss from them (the text's percentage is rounded), iperf3's mean jitter."""
    u = [s for s in streams if s.packets is not None]
    if not u:
        return {}
    lost, packets = sum(s.lost_packets or 0 for s in u), sum(s.packets or 0 for s in u)
    return {"lost_packets": lost, "packets": packets, "lost_percent": 100.0 * lost / packets if packets else 0.0,
            "jitter_ms": sum(s.jitter_ms or 0.0 for s in u) / len(u)}


def _stream(sid: str, label: str, finals: list[_Line], ivals: list[_Line]) -> StreamResult:
    sr = StreamResult(id=int(sid), direction=label)
    for ln in finals:
        if ln.final == "sender":
            sr.sender_bps, sr.sender_bytes = ln.bps, ln.nbytes
            if m := TCP_SENDER.match(ln.rest):
                sr.retransmits = int(m["retr"])
        else:
            sr.receiver_bps, sr.receiver_bytes = ln.bps, ln.nbytes
        if (u := UDP_LOSS.search(ln.rest)) and ln.final == "receiver":
            sr.jitter_ms, sr.lost_packets, sr.packets, sr.lost_percent = float(u["j"]), int(u["l"]), int(u["t"]), float(u["p"])
    cw = [_cwnd(ln.rest) for ln in ivals]
    cw = [c for c in cw if c]
    sr.max_cwnd = max(cw) if cw else None
    return sr


def _cwnd(rest: str) -> int | None:
    m = TCP_SENDER.match(rest)
    if m is None or m["cw"] is None:
        return None
    return int(float(m["cw"]) * _BYTES[m["cwu"]])


def _intervals(ivals: list[_Line], ids: list[str], label: str, udp: bool) -> list[Interval]:
    groups: dict[tuple[float, float, bool], list[_Line]] = {}
    for ln in ivals:
        if ln.end > ln.start:
            groups.setdefault((ln.start, ln.end, ln.omitted), []).append(ln)
    out = []
    for (start, end, omitted), lns in groups.items():
        per = sorted((ln for ln in lns if ln.sid != "SUM"), key=lambda ln: int(ln.sid))
        summ = next((ln for ln in lns if ln.sid == "SUM"), None)
        retr = [int(m["retr"]) for ln in per if (m := TCP_SENDER.match(ln.rest)) and not udp]
        cw = [c for c in (_cwnd(ln.rest) for ln in per) if c] if not udp else []
        out.append(Interval(start=start, end=end, bps=summ.bps if summ else sum(ln.bps for ln in per), direction=label,
                            retransmits=sum(retr) if retr else None, cwnd=max(cw) if cw else None, omitted=omitted,
                            stream_bps=[ln.bps for ln in per]))
    return out


class Iperf3TextImporter(ImporterBase):
    name = "iperf3-text"
    describes = "iperf3 text"

    def detect(self, text: str) -> bool:
        text = unstamped(text)
        return any(LINE.match(ln.rstrip()) for ln in text.splitlines()) and bool(re.search(r"^(Connecting to host |Accepted connection from |-+\nServer listening on \d)", text, re.M))

    def split(self, text: str) -> list[tuple[str, str]]:
        """Each test starts at "Connecting to host" (a client's log) or "Accepted connection
        from" (a server's); what comes before it since the last test is its header."""
        lines = text.splitlines(keepends=True)
        bare = unstamped(text).splitlines(keepends=True)  # line for line, without --timestamps' stamps
        starts = [i for i, ln in enumerate(bare) if START.match(ln)]
        if len(starts) <= 1:
            return [("", text)]
        out: list[tuple[str, str]] = []
        prev_end = 0
        for n, i in enumerate(starts):
            nxt = starts[n + 1] if n + 1 < len(starts) else len(lines)
            body = lines[i:nxt]
            # the test ends at "iperf Done." (client) or its last report line (server);
            # the lines after it belong to the next test's header
            plain = bare[i:nxt]
            end = next((k + 1 for k in range(len(body) - 1, -1, -1) if plain[k].strip() == "iperf Done." or LINE.match(plain[k].rstrip())), len(body))
            out.append(("".join(lines[prev_end:i]), "".join(body[:end])))
            prev_end = i + end
        return out

    def read(self, path: Path, text: str, hints: Hints) -> TestResult:
        given, text = text, unstamped(text)
        doc = _parse(text)
        _check(path, text, doc)
        res = _read(doc)
        wl = workload(path, "iperf3", hints, protocol="udp" if doc.udp else None, parallel=res.tool.num_streams or None,
                      reverse=doc.reverse or None, bidir=doc.bidir or None,
                      duration=max(1, round(res.duration)) if res.duration else None,
                      omit=sum(1 for ln in doc.lines if ln.omitted and ln.sid != "SUM") // max(1, len(doc.streams)) or None)
        res.protocol = str(wl.protocol)
        if res.receiver_bps is None:
            who = "server" if doc.client else "client"
            raise NettuneError(f"{path}: this log has only the sending side's numbers; import the {who}'s log (it has the receiver's)")
        if not doc.client:
            res.warnings.append("imported the server's log: sender-side numbers (retransmits, cwnd) are unknown")
            if not doc.bidir and not doc.reverse:
                res.sender_bps = res.sender_bps if any(ln.final == "sender" for ln in doc.lines) else None
        res.warnings.append("read from iperf3's text output: rates have three significant digits, no RTT")
        if given != text:
            res.warnings.append("iperf3 --timestamps: the time stamp before each line was left out")
        res.client, res.server = side(path, given), None
        return res


IMPORTER = Iperf3TextImporter()
