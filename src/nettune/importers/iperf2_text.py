"""iperf2's human-readable output (-i, -P with [SUM], -e enhanced, UDP, -R, --full-duplex,
-d): one side's log, read by the same parser as live tests (engines.iperf2_enhanced turns it
into the CSV's rows, engines.iperf2 reads those)."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from ..engines.iperf2 import Iperf2Engine
from ..engines.iperf2_enhanced import CONNECTED, CONNECTS_TO, LISTENS, REPORT, SERVER_REPORT, is_text, log_role, parse_text_rows
from ..engines.iperf2_reader import Row
from ..engines.result import TestResult
from ..errors import NettuneError
from .base import Hints, ImporterBase, side, workload
from .one_side import SEQUENTIAL, one_side

CLIENT_START = re.compile(r"^-+\n(?=Client connecting to )", re.M)
DASHES = re.compile(r"^-{20,}\s*$")
# what only iperf2's text has (a report pasted without its banner still says so), and what
# only iperf3's has: a file of report lines is read as iperf2's only with the one, not the other
IPERF2_MARKS = re.compile(r"^\[ ID\] Interval\s+Transfer\s+Bandwidth|^\[\s*(?:\d+|SUM)\]\s+\d+\.\d-\s*\d+\.\d sec|Server Report:"
                          r"|datagrams received out-of-order|^\[\s*\d+\] Sent \d+ datagrams", re.M)
IPERF3_MARKS = re.compile(r"Bitrate|\b(?:sender|receiver)\s*$|^- - - -|^iperf Done\.|\(omitted\)|\[[TR]X-[CS]\]", re.M)


class Iperf2TextImporter(ImporterBase):
    name = "iperf2-text"
    describes = "iperf2 text"

    def detect(self, text: str) -> bool:
        if not is_text(text):
            return False
        return any(CONNECTS_TO.match(ln) or LISTENS.match(ln) or CONNECTED.match(ln.strip()) for ln in text.splitlines()) or bare(text)

    def split(self, text: str) -> list[tuple[str, str]]:
        """A client's log with several tests: each starts at its "Client connecting to"
        block (a server's log is one test: -d's server also prints that block mid-test)."""
        first = next((ln for ln in text.splitlines() if CONNECTS_TO.match(ln) or LISTENS.match(ln)), "")
        starts = [m.start() for m in CLIENT_START.finditer(text)] if CONNECTS_TO.match(first) else []
        if len(starts) <= 1:
            return [("", text)]
        out, prev = [], 0
        for n, i in enumerate(starts):
            nxt = starts[n + 1] if n + 1 < len(starts) else len(text)
            body = text[i:nxt]
            lines = body.splitlines(keepends=True)
            # the test's last line is its last report line; what follows is the next header
            end = max((k + 1 for k, ln in enumerate(lines) if ln.startswith("[")), default=len(lines))
            out.append((text[prev:i], "".join(lines[:end])))
            prev = i + len("".join(lines[:end]))
        return out

    def read(self, path: Path, text: str, hints: Hints) -> TestResult:
        if not text.rstrip(" \t").endswith("\n"):
            raise NettuneError(f"{path}: cut off: the last line has no newline at its end (if the file is complete, add one)")
        pasted = bare(text)
        given = _with_connections(text) if pasted else text  # report lines only: each id is a stream of one side
        rows, _ = parse_text_rows(given)
        if not rows:
            raise NettuneError(f"{path}: iperf2 text without report lines (did the test run?)")
        lines = given.splitlines()
        client, port, dual = _role(lines)
        client = client and not pasted  # whose lines they are is not said
        _check_complete(path, rows, hints, client)
        _check_blocks(path, lines)
        conns = [CONNECTED.match(ln.strip()) for ln in lines]
        # a connection with no report line at all: cut off before it reported (a -r log cut
        # after the second direction's connection kept only the first: one direction imported)
        silent = {int(c["id"]) for c in conns if c} - {r.tid for r in rows}
        if silent and not pasted:
            raise NettuneError(f"{path}: cut off: {len(silent)} connection(s) have no report line")
        if client and dual and {r.direction for r in rows if r.tid >= 0} != {"c2s", "s2c"}:
            # a -d/-r client opens its own listener for the connection back: a log cut after
            # the first direction's final line (-r) looks like a whole one-way test
            raise NettuneError(f"{path}: a -d/-r client's log (it opens its own listener) with one direction's report only: "
                               "cut off, or the server never connected back")
        flags = " ".join(c["flags"] for c in conns if c)
        udp = any(" UDP port" in ln for ln in lines if CONNECTS_TO.match(ln) or LISTENS.match(ln)) or any("jitter" in r.ext or "datagrams" in r.ext for r in rows)
        bidir = "(full-duplex)" in flags or dual
        reverse = "(reverse)" in flags and not bidir
        keys = {(r.src_port, r.dst_port) for r in rows if "relay" not in r.ext}
        parallel = len({k for k in keys if port in k}) // (2 if bidir and "(full-duplex)" in flags else 1) or None
        end = max(r.end for r in rows)
        wl = workload(path, "iperf2", hints, protocol="udp" if udp else None, parallel=parallel, reverse=reverse or None,
                      bidir=bidir or None, duration=max(1, round(end)), port=port)
        eng = Iperf2Engine()
        res = eng.parse(wl, side(path, given), side(path, "", role="server"))
        if not client or not res.ok and (res.sender_bps is not None or wl.reverse is True):
            # one side's report only: let its rows stand for both sides, and say so
            both = eng.parse(wl, side(path, given), side(path, given, role="server"))
            relays = [r for r in rows if "relay" in r.ext]
            if both.ok and udp and relays and not client:
                res = both
                _server_of_dual_udp(res, relays)
            elif both.ok:
                res = both
                one_side(res, udp and not relays, path)
        if bidir and _one_after_the_other(lines):
            res.warnings.append(SEQUENTIAL)
        if pasted:
            res.warnings.append("report lines without iperf2's banner or connection lines: each [ id] read as one stream of one side")
        res.duration = float(end)
        res.client, res.server = side(path, text), None
        return res


def _server_of_dual_udp(res: TestResult, relays: list[Row]) -> None:
    """A server's log of a UDP -d test: what it received (client->server) without the
    client's sending rate (unknown, never the receiver's), and what it sent back with the
    client's receiver report it relays ("Server Report:"): the reverse jitter and loss."""
    res.sender_bps = res.sender_bytes = None
    by_id = {r.tid: r for r in relays}
    for st in res.streams:
        if st.direction == "forward":
            st.sender_bps = st.sender_bytes = None
        elif (r := by_id.get(st.id)) is not None:
            st.receiver_bps, st.receiver_bytes = r.bps, r.nbytes
            st.jitter_ms, st.lost_packets, st.packets = r.ext.get("jitter"), int(r.ext.get("errors", 0)), int(r.ext.get("datagrams", 0))
            st.lost_percent = r.ext.get("errpercent")
    back = [st for st in res.streams if st.direction == "reverse" and st.id in by_id]
    if res.reverse is not None and back:
        lost, packets = sum(st.lost_packets or 0 for st in back), sum(st.packets or 0 for st in back)
        res.reverse_receiver_bps = sum(st.receiver_bps or 0.0 for st in back)
        res.reverse.receiver_bytes = sum(st.receiver_bytes or 0 for st in back)
        res.reverse.lost_packets, res.reverse.packets = lost, packets
        res.reverse.lost_percent = 100.0 * lost / packets if packets else 0.0
        res.reverse.jitter_ms = sum(st.jitter_ms or 0.0 for st in back) / len(back)
    res.warnings.append("a server's log of a UDP -d test: the client's sending rate is not in it (unknown); "
                        "the reverse direction's receiver numbers are the client's report the server relayed")


def _one_after_the_other(lines: list[str]) -> bool:
    """-r (a tradeoff test): a connection opened after another stream printed its final
    report, where -d's and --full-duplex's run side by side."""
    last_end: dict[str, float] = {}
    for ln in lines:
        if (m := REPORT.match(ln.strip())) and m["id"].isdigit():
            last_end[m["id"]] = max(last_end.get(m["id"], 0.0), float(m["b"]))
    done = False
    for ln in lines:
        if CONNECTED.match(ln.strip()) and done:
            return True
        m = REPORT.match(ln.strip())
        done = done or bool(m and m["id"].isdigit() and float(m["a"]) < 0.05 and float(m["b"]) >= last_end[m["id"]] > 1.0)
    return False


def bare(text: str) -> bool:
    """iperf2 report lines pasted without the banner and connection lines: iperf2's marks
    (its header, one-decimal intervals, UDP's server report), none of iperf3's."""
    lines = text.splitlines()
    if any(CONNECTS_TO.match(ln) or LISTENS.match(ln) or CONNECTED.match(ln.strip()) for ln in lines):
        return False
    return bool(IPERF2_MARKS.search(text)) and not IPERF3_MARKS.search(text)


def _with_connections(text: str) -> str:
    """The report with a connection line for each stream id, so the parser can place its
    lines (the ports are made up: 40000 + id on this side, 5001 on the other)."""
    ids = sorted({int(m["id"]) for ln in text.splitlines() if (m := REPORT.match(ln.strip())) and m["id"].isdigit()})
    made = "".join(f"[{i:3d}] local 0.0.0.0 port {40000 + i} connected with 0.0.0.0 port 5001\n" for i in ids)
    return made + text


def _role(lines: list[str]) -> tuple[bool, int | None, bool]:
    """(a client's log?, the server's port, a -d test?) from the header blocks: a client
    prints "Client connecting to H, TCP port S", except with -d, where its first block is
    its own listener, "Server listening on TCP ports L-S"; a server's -d log then has a
    "Client connecting to" block for its connection back."""
    heads = [m for ln in lines if (m := CONNECTS_TO.match(ln) or LISTENS.match(ln))]
    if not heads:
        return True, None, False
    first = heads[0]
    if "ports" in first.groupdict() and "-" in first["ports"]:
        return True, int(first["ports"].split("-")[1]), True
    if "ports" in first.groupdict() and log_role("\n".join(lines)) == "client":
        # -d/-r with -L: its own listener ("port L") first, then "Client connecting to H, port S"
        return True, int(next(m["port"] for m in heads if "port" in m.groupdict())), True
    if "port" in first.groupdict():
        # -d without -L: the client's listener ("Server listening on ... port S") comes after
        return True, int(first["port"]), any("ports" in m.groupdict() for m in heads[1:])
    return False, int(first["ports"]), any("port" in m.groupdict() for m in heads[1:])


def _check_blocks(path: Path, lines: list[str]) -> None:
    """What iperf2 prints in one piece, cut: a banner opened by a line of dashes and never
    closed by one (a -r server's log cut as it began its connection back), or a UDP
    sender's "Server Report:" heading without the report row it heads."""
    if sum(1 for ln in lines if DASHES.match(ln)) % 2:
        raise NettuneError(f"{path}: cut off: it ends inside a banner (a line of dashes opens one and none closes it)")
    waiting: set[str] = set()
    for ln in lines:
        if m := SERVER_REPORT.match(ln.strip()):
            waiting.add(m["id"])
        elif (m := REPORT.match(ln.strip())) and m["id"] in waiting:
            waiting.discard(m["id"])
    if waiting:
        raise NettuneError(f"{path}: cut off: a \"Server Report:\" heading without its report line")


def _check_complete(path: Path, rows: list[Row], hints: Hints, client: bool) -> None:
    """A report cut off at a line's end: a stream with interval lines but no final line
    (from 0 to the end), streams with different numbers of lines, or (with --set
    duration) a report shorter than 3/4 of it."""
    end = max(r.end for r in rows)
    streams: dict[tuple[int, int], bool] = {}
    counts: Counter[tuple[int, int]] = Counter()
    for r in rows:
        if "relay" in r.ext or r.tid < 0:  # relayed reports and [SUM] totals are not streams
            continue
        key = (r.src_port, r.dst_port)
        counts[key] += 1
        streams[key] = streams.get(key, False) or (r.start < 0.05 and r.end >= end - 0.5 and r.end - r.start > 0.5 * end)
    unfinished = sum(1 for done in streams.values() if not done)
    if unfinished:
        raise NettuneError(f"{path}: cut off: {unfinished} stream(s) have interval lines but no final report")
    if len(set(counts.values())) > 1:
        raise NettuneError(f"{path}: cut off: its streams have {min(counts.values())} to {max(counts.values())} report lines, a whole report has as many for each")
    want = hints.get("duration")
    if isinstance(want, (int, float)) and not isinstance(want, bool) and end < 0.75 * want:
        raise NettuneError(f"{path}: the report covers {end:g}s but --set duration={want}; is the file cut off, or is --set wrong?")
    if client:
        # a client prints its final [SUM] after its streams' final lines, and a UDP client
        # relays every stream's server report (a server may be stopped before its own [SUM])
        sums = [r for r in rows if r.tid < 0]
        if sums and not any(r.start < 0.05 and r.end >= end - 0.5 and r.end - r.start > 0.5 * end for r in sums):
            raise NettuneError(f"{path}: cut off: the final [SUM] line is missing")
        relayed = {(r.src_port, r.dst_port) for r in rows if "relay" in r.ext}
        # what the client sent has the server's report relayed; with -d, what it received has none
        sent = {(r.src_port, r.dst_port) for r in rows if "relay" not in r.ext and r.tid >= 0 and r.direction != "s2c"}
        if relayed and relayed != sent:
            raise NettuneError(f"{path}: cut off: {len(set(streams) - relayed)} stream(s) have no server report")


IMPORTER = Iperf2TextImporter()
