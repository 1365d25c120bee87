"""iperf3 `-J` logs: the client's (any test) or the server's (a one-way test)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..engines.iperf3 import Iperf3Engine, load_json
from ..engines.result import TestResult
from ..errors import NettuneError
from .base import Hints, ImporterBase, side, workload


class Iperf3JsonImporter(ImporterBase):
    name = "iperf3-json"
    describes = "iperf3 JSON (-J)"

    def detect(self, text: str) -> bool:
        return text.lstrip()[:1] == "{"

    def read(self, path: Path, text: str, hints: Hints) -> TestResult:
        doc, why = load_json(text)
        if doc is None:
            raise NettuneError(f"{path}: looks like JSON but is not a readable iperf3 -J log: {why}")
        start: dict[str, Any] = doc["start"] if isinstance(doc.get("start"), dict) else {}
        if not start and "end" not in doc:
            raise NettuneError(f"{path}: JSON without iperf3's start/end sections; is it an iperf3 -J log?")
        ts: dict[str, Any] = start["test_start"] if isinstance(start.get("test_start"), dict) else {}
        end: dict[str, Any] = doc["end"] if isinstance(doc.get("end"), dict) else {}
        server_log = "accepted_connection" in start and "connecting_to" not in start
        two_way = bool(ts.get("reverse")) or bool(ts.get("bidir")) or "sum_sent_bidir_reverse" in end
        if server_log and two_way:
            raise NettuneError(f"{path}: a server-side log of a reverse/bidir test sees the test backwards; import the client's -J log")
        dur = ts.get("duration")
        wl = workload(path, "iperf3", hints, protocol=str(ts.get("protocol", "tcp")).lower() if ts.get("protocol") else None,
                      parallel=ts.get("num_streams") or None, reverse=bool(ts.get("reverse")) or None,
                      bidir=True if (ts.get("bidir") or "sum_sent_bidir_reverse" in end) else None,
                      duration=max(1, round(dur)) if isinstance(dur, (int, float)) and dur and math.isfinite(dur) else None)
        stamp = start["timestamp"].get("timesecs") if isinstance(start.get("timestamp"), dict) else None
        started = float(stamp) if isinstance(stamp, (int, float)) else None
        res = Iperf3Engine().parse(wl, side(path, text, started), side(path, "", started, "server"))
        if server_log and res.ok:
            if not res.sender_bps:
                res.sender_bps = None  # the server's log does not know what the client sent
            res.warnings.append("imported the server's log: sender-side numbers (retransmits, cwnd) are unknown")
            for part in (*res.streams, *res.intervals):
                part.direction = "forward"  # read as a client log its streams look reversed; the test was one-way
        res.client = side(path, text, started)
        res.server = None
        return res


IMPORTER = Iperf3JsonImporter()
