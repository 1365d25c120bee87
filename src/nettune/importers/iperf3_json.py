"""iperf3 `-J` logs: the client's (any test) or the server's (a one-way test)."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from ..engines.iperf3 import Iperf3Engine, load_json
from ..engines.iperf3_reader import is_server_log, json_objects
from ..engines.result import TestResult
from ..errors import NettuneError
from .base import Hints, ImporterBase, side, workload


class Iperf3JsonImporter(ImporterBase):
    name = "iperf3-json"
    describes = "iperf3 JSON (-J)"

    def detect(self, text: str) -> bool:
        body = _body(text)
        return body[:1] == "{" or bool(re.match(r"\[\s*[{\]]", body))

    def split(self, text: str) -> list[tuple[str, str]]:
        """A JSON array of results, or results written one after the other: one test each."""
        body = _body(text)
        if re.match(r"\[\s*[{\]]", body):
            try:
                docs = json.loads(body)
            except (json.JSONDecodeError, RecursionError, ValueError):
                return [("", body)]  # read() says what is wrong with it
            if isinstance(docs, list) and docs and all(isinstance(d, dict) for d in docs):
                return [("", json.dumps(d, indent=1) + "\n") for d in docs]
            return [("", body)]
        try:
            docs = json_objects(body)
        except (ValueError, RecursionError):  # huge numbers, deep nesting: read() says why
            return [("", text)]
        # finished tests only: a one-off server that refused a client printed that error first
        tests = [d for d in docs if isinstance(d.get("end"), dict) and d["end"] and not d.get("error")]
        if len(tests) > 1:
            return [("", json.dumps(d, indent=1) + "\n") for d in tests]
        return [("", text)]

    def read(self, path: Path, text: str, hints: Hints) -> TestResult:
        if re.match(r"\[\s*[{\]]", _body(text)):
            raise NettuneError(f"{path}: a JSON array, but not of iperf3 -J results (objects with start/end)")
        doc, why = load_json(text)
        if doc is None:
            raise NettuneError(f"{path}: looks like JSON but is not a readable iperf3 -J log: {why}")
        start: dict[str, Any] = doc["start"] if isinstance(doc.get("start"), dict) else {}
        if not start and "end" not in doc:
            raise NettuneError(f"{path}: JSON without iperf3's start/end sections; is it an iperf3 -J log?")
        ts: dict[str, Any] = start["test_start"] if isinstance(start.get("test_start"), dict) else {}
        end: dict[str, Any] = doc["end"] if isinstance(doc.get("end"), dict) else {}
        server_log = is_server_log(doc)
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
            res.reverse = None  # so nothing reads a second direction into it
            res.reverse_sender_bps = res.reverse_receiver_bps = res.reverse_retransmits = None
        res.client = side(path, text, started)
        res.server = None
        return res


# what a terminal or `script` may write before the JSON: escape sequences, a BOM, controls
_NOISE = re.compile(r"^(?:\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\ufeff|[\x00-\x08\x0b-\x1f\s])*")


def _body(text: str) -> str:
    return text[_NOISE.match(text).end():]  # type: ignore[union-attr]


IMPORTER = Iperf3JsonImporter()
