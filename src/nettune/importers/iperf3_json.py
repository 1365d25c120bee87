"""iperf3 `-J` logs: the client's (any test) or the server's (a one-way test).

What may come before the JSON is skipped and said in the run's warnings: iperf3's own
`warning: ...` lines (written on stderr, in the file when a script ran `2>&1`), a
terminal's escape sequences, or one pasted as text (`^[[F`). A JSON array, or objects
written one after another, are several tests; an array that is not of iperf3 results is
one refusal for the file.
"""
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

# the first keys iperf3 writes in a -J document (a refused test has only "error")
_DOC = re.compile(r'\{\s*"(?:start|error|title|intervals|end)"\s*:')
_DOCS = re.compile(r'\[\s*\{\s*"(?:start|error|title|intervals|end)"\s*:')
_ARRAY = re.compile(r"\[\s*[{\]]")
_KEYS = ("start", "end", "error")
HEAD_LINES = 40  # how far into a file the JSON may start (a few warnings, a pasted prompt)


class Iperf3JsonImporter(ImporterBase):
    name = "iperf3-json"
    describes = "iperf3 JSON (-J)"

    def detect(self, text: str) -> bool:
        return _start(text) is not None

    def split(self, text: str) -> list[tuple[str, str]]:
        """A JSON array of results, or results written one after the other: one test each."""
        at = _start(text)
        body = text[at:] if at is not None else text
        if _ARRAY.match(body):
            try:
                docs = json.loads(body)
            except (json.JSONDecodeError, RecursionError, ValueError):
                return [("", text)]  # read() says what is wrong with it
            if isinstance(docs, list) and docs and all(_is_result(d) for d in docs):
                return [("", json.dumps(d, indent=1) + "\n") for d in docs]
            return [("", text)]  # read() refuses it, in one line for the file
        try:
            docs = json_objects(body)
        except (ValueError, RecursionError):  # huge numbers, deep nesting: read() says why
            return [("", text)]
        # finished tests only: a one-off server that refused a client printed that error first
        tests = [d for d in docs if isinstance(d.get("end"), dict) and d["end"] and not d.get("error")]
        if len(tests) > 1:
            lead = text[:at] if at else ""  # what came before the first: read() says it was skipped
            return [("", (lead if n == 0 else "") + json.dumps(d, indent=1) + "\n") for n, d in enumerate(tests)]
        return [("", text)]

    def read(self, path: Path, text: str, hints: Hints) -> TestResult:
        at = _start(text) or 0
        skipped, body = text[:at], text[at:]
        if _ARRAY.match(body):
            raise NettuneError(f"{path}: {_not_results(body)}")
        doc, why = load_json(body)
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
        res = Iperf3Engine().parse(wl, side(path, body, started), side(path, "", started, "server"))
        if server_log and res.ok:
            _server_view(res)
        if res.ok and _limited(ts):
            seconds = measured_seconds(end)
            if seconds is not None:  # -n/-k: the test lasted what it took, not -t's default
                res.duration = seconds
        if skipped.strip():
            res.warnings.append(f"skipped {len(skipped.splitlines()) or 1} line(s) before the JSON: {_shown(skipped)}")
        if isinstance(start.get("cookie"), str) and res.ok:
            res.tool.iperf3_cookie = start["cookie"]  # the test's own id: the same test in two files is one test
        res.client = side(path, text, started)
        res.server = None
        return res


def _server_view(res: TestResult) -> None:
    """A server's own log of a one-way test: it received, so what the client sent is not
    in it (iperf3 writes 0 there): unknown, never 0."""
    if not res.sender_bps:
        res.sender_bps = None
    if not res.sender_bytes:
        res.sender_bytes = None
    for st in res.streams:
        st.direction = "forward"  # read as a client log its streams look reversed; the test was one-way
        if not st.sender_bytes:
            st.sender_bytes, st.sender_bps = None, None
    for iv in res.intervals:
        iv.direction = "forward"
    res.warnings.append("imported the server's log: sender-side numbers (bytes sent, retransmits, cwnd) are unknown")
    res.reverse = None  # so nothing reads a second direction into it
    res.reverse_sender_bps = res.reverse_receiver_bps = res.reverse_retransmits = None


def _limited(ts: dict[str, Any]) -> bool:
    """An -n (bytes) or -k (blocks) test: it ran until that much was sent."""
    return any(isinstance(ts.get(k), (int, float)) and ts.get(k) > 0 for k in ("bytes", "blocks"))


def measured_seconds(end: dict[str, Any]) -> float | None:
    """How long the test ran, by the sender's summary (the receiver's, or UDP's `sum`)."""
    for key in ("sum_sent", "sum_received", "sum"):
        part = end.get(key)
        secs = part.get("seconds") if isinstance(part, dict) else None
        if isinstance(secs, (int, float)) and not isinstance(secs, bool) and math.isfinite(secs) and secs > 0:
            return float(secs)
    return None


def _start(text: str) -> int | None:
    """Where the JSON starts: at once, after a terminal's escapes, or after a few lines
    that are not JSON (iperf3's `warning:` lines, a pasted `^[[F`); None if nowhere."""
    lead = _NOISE.match(text).end()  # type: ignore[union-attr]
    if text[lead:lead + 1] == "{" or _ARRAY.match(text, lead):
        return lead
    pos = 0
    for line in text.splitlines(keepends=True)[:HEAD_LINES]:
        for mark, rx in (("{", _DOC), ("[", _DOCS)):
            i = line.find(mark)
            if i >= 0 and rx.match(text, pos + i):
                return pos + i
        pos += len(line)
    return None


def _is_result(d: Any) -> bool:
    return isinstance(d, dict) and any(k in d for k in _KEYS)


def _not_results(body: str) -> str:
    """Why a JSON array is not read (one line for the whole file)."""
    try:
        docs = json.loads(body)
    except (json.JSONDecodeError, RecursionError, ValueError) as e:
        return f"a JSON array that cannot be read ({str(e)[:80]})"
    if not isinstance(docs, list) or not docs:
        return "an empty JSON array: no iperf3 results in it"
    bad = [n for n, d in enumerate(docs, 1) if not _is_result(d)]
    first = docs[bad[0] - 1]
    what = f"keys {', '.join(list(first)[:5])}" if isinstance(first, dict) else type(first).__name__
    return (f"a JSON array of {len(docs)} elements, {len(bad)} of them not iperf3 -J results (objects with start/end); "
            f"element {bad[0]} has {what}")


def _shown(skipped: str) -> str:
    """What was skipped, quoted (escapes shown as \\x1b, never sent to a terminal)."""
    first = next((ln for ln in skipped.splitlines() if ln.strip()), skipped)
    return repr(first.strip()[:80]) + (" ..." if len(skipped.strip()) > len(first.strip()[:80]) else "")


# what a terminal or `script` may write before the JSON: escape sequences, a BOM, controls
_NOISE = re.compile(r"^(?:\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\ufeff|[\x00-\x08\x0b-\x1f\s])*")


IMPORTER = Iperf3JsonImporter()
