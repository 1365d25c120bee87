"""iperf2 `-y C` outputs (2.1.x rows, 2.2.x with a header row): one side's report, or
both sides' rows in one file."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from ..engines.iperf2 import Iperf2Engine, parse_rows
from ..engines.result import TestResult
from ..errors import NettuneError
from .base import Hints, ImporterBase, side, workload

TIMESTAMP = re.compile(r"\d{8,}(\.\d+)?")  # the first field of every iperf2 CSV data row


def _rows(text: str) -> list[list[str]]:
    return [ln.split(",") for ln in text.splitlines() if ln.count(",") >= 7]


def _own_header(f: list[str]) -> bool:
    return f[0].strip().lower() == "time"  # 2.2's header row


def _data(rows: list[list[str]]) -> list[list[str]]:
    """The report rows: iperf2's own header rows (2.2) and a header line a user put first
    (any first row whose first field is not a timestamp) left out."""
    out = [f for f in rows if not _own_header(f)]
    if out and not TIMESTAMP.fullmatch(out[0][0].strip()):
        out = out[1:]
    return out


def _user_header(text: str) -> str:
    """The first line, when it is a header a user added (not iperf2's own)."""
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    f = first.split(",")
    return first if len(f) >= 8 and not _own_header(f) and not TIMESTAMP.fullmatch(f[0].strip()) else ""


def _server_row(f: list[str]) -> bool:
    """2.1.8's server stamps its final rows 19700101000000 (its clock is not read), so rows
    of both sides joined in one file are told apart by that."""
    return f[0].strip().startswith("19700101")


def _layout(data: list[list[str]]) -> tuple[bool, int | None]:
    """(both directions?, the server's port) from the ports, which 2.1.8 writes sender
    first: --full-duplex has a port that is a destination in some rows and a source in
    others (or the client's "::,0" receive rows); -d has two listening ports, the
    server's and the client's own, whose connections share no port."""
    pairs = [(int(f[2]), int(f[4])) for f in data if f[2].strip().isdigit() and f[4].strip().isdigit() and int(f[5]) >= 0]
    if not pairs:
        return False, None
    srcs, dsts = {a for a, _ in pairs}, {b for _, b in pairs if b}
    seen = Counter(p for pair in set(pairs) for p in pair if p)
    both = (srcs & dsts) - {0}
    if both:  # the server's port is in every connection
        return True, max(both, key=lambda p: seen[p])
    if any(b == 0 for _, b in pairs):
        return True, pairs[[b for _, b in pairs].index(0)][0]
    if len(dsts) >= 2 and len(srcs) >= 2:  # -d (a -R test has one source port, the server's)
        return True, pairs[0][1]  # the client's first row is its own connection to the server
    return False, None


class Iperf2CsvImporter(ImporterBase):
    name = "iperf2-csv"
    describes = "iperf2 CSV (-y C)"

    def detect(self, text: str) -> bool:
        data = _data(_rows(text))
        return bool(data) and all(TIMESTAMP.fullmatch(f[0].strip()) for f in data[:3])

    def read(self, path: Path, text: str, hints: Hints) -> TestResult:
        rows = _rows(text)
        data = _data(rows)
        header = next((f for f in rows if _own_header(f)), None)
        # the protocol from every row, not the first: UDP rows have 14 (2.1) or 17 fields
        udp = any("jitter" in x.lower() for x in header) if header else any(len(f) in (14, 17) for f in data)
        user = _user_header(text)
        if user:
            text = text.replace(user + "\n", "", 1)
        lines = text.splitlines(keepends=True)
        srv = "".join(ln for ln in lines if ln.count(",") >= 7 and _server_row(ln.split(",")))
        cli = "".join(ln for ln in lines if not (ln.count(",") >= 7 and _server_row(ln.split(","))))
        check_complete(path, text, udp, hints, [cli, srv] if srv and _data(_rows(cli)) else [text])
        both, port = _layout(data)
        parsed, _ = parse_rows(text, udp)
        end = max((r.end for r in parsed), default=0.0)
        wl = workload(path, "iperf2", hints, protocol="udp" if udp else None, bidir=True if both else None, port=port,
                      duration=max(1, round(end)) if end else None)
        eng = Iperf2Engine()
        if srv and _data(_rows(cli)):  # both sides' rows in one file: each side's numbers from its own rows
            res = eng.parse(wl, side(path, cli), side(path, srv, role="server"))
        else:
            res = eng.parse(wl, side(path, text), side(path, "", role="server"))
            if not res.ok and res.sender_bps is not None or srv:
                # One side's report only (the usual case for old logs): let the same rows stand
                # for both sides, and say so, rather than leave the run without a rate.
                res = eng.parse(wl, side(path, text), side(path, text, role="server"))
                if res.ok:
                    res.warnings.append("one side's iperf2 report only: sender and receiver rates both come from it")
        if user:
            res.warnings.append(f"line 1 ({user[:60]!r}) is not an iperf2 row: read as a header and left out")
        if end:
            res.duration = float(end)  # what the report covers, not the workload's default
        res.client, res.server = side(path, text if not user else user + "\n" + text), None
        return res


def check_complete(path: Path, text: str, udp: bool, hints: Hints, sides: list[str] | None = None) -> None:
    """A CSV report cut off at any byte: its last line is unfinished, a stream's interval
    rows have no final row after them, or (with --set duration) the report is too short.
    Each side's rows are checked on their own (`sides`: a file joining both)."""
    if not text.rstrip(" \t").endswith("\n"):
        raise NettuneError(f"{path}: cut off: the last line has no newline at its end (if the file is complete, add one)")
    for part in sides or [text]:
        _check_side(path, part, udp, hints)


def _check_side(path: Path, text: str, udp: bool, hints: Hints) -> None:
    rows, _ = parse_rows(text, udp)
    if not rows:
        return  # the parser says what is wrong
    end = max(r.end for r in rows)
    streams: dict[tuple[int, int, int], bool] = {}
    for r in rows:  # a stream is one socket's rows; its final row runs from 0 to the end
        key = (r.src_port, r.dst_port, r.tid)
        streams[key] = streams.get(key, False) or (r.start < 0.05 and r.end >= end - 0.5)
    unfinished = sum(1 for done in streams.values() if not done)
    if unfinished:
        raise NettuneError(f"{path}: cut off: {unfinished} stream(s) have interval rows but no final report")
    counts = Counter((r.src_port, r.dst_port, r.tid) for r in rows)
    if len(set(counts.values())) > 1:  # every stream of a whole report has one row per interval, plus its final
        raise NettuneError(f"{path}: cut off: its streams have {min(counts.values())} to {max(counts.values())} rows, a whole report has as many for each")
    want = hints.get("duration")
    if isinstance(want, (int, float)) and not isinstance(want, bool) and end < 0.75 * want:
        raise NettuneError(f"{path}: the report covers {end:g}s but --set duration={want}; is the file cut off, or is --set wrong?")


IMPORTER = Iperf2CsvImporter()
