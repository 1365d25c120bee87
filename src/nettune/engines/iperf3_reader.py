"""Reading iperf3's -J output (one or more JSON objects) and its version string."""
from __future__ import annotations

import json
import re
from typing import Any

from .streams import tail

# iperf3 3.7-3.10 --bidir wrote these keys twice in one object (#952); 3.11 renamed the
# second (server->client) copy to <key>_bidir_reverse. We rename it the same way.
_DUP_KEYS = ("sum", "sum_sent", "sum_received")


def parse_version(text: str) -> str:
    """'iperf 3.12 (cJSON 1.7.15)' -> '3.12'; '' when there is no version in `text`."""
    m = re.search(r"iperf\s+(?:version\s+)?(\d+\.\d+(?:\.\d+)?)", text or "")
    return m.group(1) if m else ""


def version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v or "")[:3])


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in `text`, in order (a one-off server that refused a
    client first prints that error object, then its test's)."""
    out: list[dict[str, Any]] = []
    dec = json.JSONDecoder(object_pairs_hook=_keep_duplicates)
    i = (text or "").find("{")
    while i >= 0:
        try:
            doc, end = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            break
        if isinstance(doc, dict):
            out.append(doc)
        i = text.find("{", end)
    return out


def _keep_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out and k in _DUP_KEYS and f"{k}_bidir_reverse" not in out:
            out[f"{k}_bidir_reverse"] = v  # first copy is client->server on both sides
        else:
            out[k] = v  # other duplicates (3.12 sock_bufsize with -P): last wins, as json does
    return out


def load_json(text: str) -> tuple[dict[str, Any] | None, str]:
    """The first JSON object in `text` (warnings may precede it), or (None, reason)."""
    if not text or not text.strip():
        return None, "empty output"
    i = text.find("{")
    if i < 0:
        return None, "no JSON object in output: " + tail(text)
    try:
        doc, _ = json.JSONDecoder(object_pairs_hook=_keep_duplicates).raw_decode(text, i)
    except json.JSONDecodeError as e:
        return None, f"output is not valid JSON ({e.msg} at line {e.lineno}, truncated?)"
    except RecursionError:  # json's decoder recurses into nested arrays/objects
        return None, "output is JSON nested thousands of levels deep, not an iperf3 report"
    except ValueError as e:  # int() inside json: a number of more than 4300 digits
        return None, f"output is not an iperf3 report ({str(e).split(';')[0]})"
    if not isinstance(doc, dict):
        return None, "output is JSON but not an object"
    return doc, ""


def stream_receive_bps(nbytes: int, interval_seconds: float, measured_seconds: float | None) -> float | None:
    """A UDP stream's receive rate from the bytes of its non-omitted intervals. Divided by
    the receiver summary's seconds (the time iperf3's own total uses), not by the sum of
    the intervals' lengths: with -O, 3.12 can stretch the first interval after the omit
    (seen at +0.18 s on a 3 s test, so streams read 6% low while the total was right)."""
    seconds = measured_seconds if measured_seconds and measured_seconds > 0 else interval_seconds
    return nbytes * 8 / seconds if seconds > 0 else None


def is_server_log(doc: dict[str, Any]) -> bool:
    """Whether a -J document is the server's own log: its start says whom it accepted,
    never whom it connected to. Read as a client's, a forward test's streams in it look
    reversed (the server is their receiver), so its reader must turn them back."""
    start = doc.get("start")
    return isinstance(start, dict) and "accepted_connection" in start and "connecting_to" not in start
