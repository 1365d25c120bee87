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


def _data(rows: list[list[str]]) -> list[list[str]]:
    return [f for f in rows if f[0].strip().lower() != "time"]


class Iperf2CsvImporter(ImporterBase):
    name = "iperf2-csv"
    describes = "iperf2 CSV (-y C)"

    def detect(self, text: str) -> bool:
        data = _data(_rows(text))
        return bool(data) and all(TIMESTAMP.fullmatch(f[0].strip()) for f in data[:3])

    def read(self, path: Path, text: str, hints: Hints) -> TestResult:
        rows = _rows(text)
        data = _data(rows)
        header = next((f for f in rows if f[0].strip().lower() == "time"), None)
        udp = any("jitter" in x.lower() for x in header) if header else len(data[0]) in (14, 17)
        check_complete(path, text, udp, hints)
        wl = workload(path, "iperf2", hints, protocol="udp" if udp else None)
        eng = Iperf2Engine()
        res = eng.parse(wl, side(path, text), side(path, "", role="server"))
        if not res.ok and res.sender_bps is not None:
            # One side's report only (the usual case for old logs): let the same rows stand
            # for both sides, and say so, rather than leave the run without a rate.
            res = eng.parse(wl, side(path, text), side(path, text, role="server"))
            if res.ok:
                res.warnings.append("one side's iperf2 report only: sender and receiver rates both come from it")
        res.client, res.server = side(path, text), None
        return res


def check_complete(path: Path, text: str, udp: bool, hints: Hints) -> None:
    """A CSV report cut off at any byte: its last line is unfinished, a stream's interval
    rows have no final row after them, or (with --set duration) the report is too short."""
    if not text.rstrip(" \t").endswith("\n"):
        raise NettuneError(f"{path}: cut off: the last line has no newline at its end (if the file is complete, add one)")
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
