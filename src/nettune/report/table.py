"""The results table (`nettune results`): one row per test, study A's columns first."""
from __future__ import annotations

import csv
import io
import json
from typing import Any

from .fit import Fitted, fit_table

# Fields every JSON record carries (documented in docs/results.md).
JSON_FIELDS = [
    "study", "study_id", "point", "run", "warmup", "ok", "error", "engine", "tool_version", "protocol", "duration",
    "sender_bps", "receiver_bps", "total_bps", "sender_bytes", "receiver_bytes", "retransmits", "max_cwnd",
    "rtt_mean_us", "rtt_min_us", "rtt_max_us", "jitter_ms", "lost_packets", "packets", "lost_percent",
    "reverse_sender_bps", "reverse_receiver_bps", "reverse_retransmits",
    "cpu_client", "cpu_server", "cpu_host", "cpu_host_softirq", "cpu_extra", "tool_cpu", "warnings", "settings", "streams",
    "pair",
]


def records(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in runs:
        rec = dict(r)
        rec["pair"] = (r.get("extra") or {}).get("pair")  # "server->client" in a pairs study
        rec["total_bps"] = None if r.get("receiver_bps") is None else r["receiver_bps"] + (r.get("reverse_receiver_bps") or 0.0)
        out.append({k: rec.get(k) for k in JSON_FIELDS})
    return out


def _g(bps: float | None) -> str:
    return "" if bps is None else f"{bps / 1e9:.2f}"


def _pct(v: float | None) -> str:
    return "" if v is None else f"{v:.0f}"


def columns(runs: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    params = list(runs[0]["point"]) if runs else []
    multi = any(r["run"] > 0 or r["warmup"] for r in runs)
    pairs = any((r.get("extra") or {}).get("pair") for r in runs)
    has_retr = any(r.get("retransmits") is not None for r in runs)
    has_rev = any(r.get("reverse_receiver_bps") is not None for r in runs)
    has_udp = any(r.get("lost_percent") is not None for r in runs)
    head = params + (["pair"] if pairs else []) + (["run"] if multi else []) + ["Gbit/s"] + (["rev Gbit/s"] if has_rev else [])
    head += ["client CPU%", "server CPU%", "host CPU%", "softirq%"]
    head += (["retrans"] if has_retr else []) + (["loss %", "jitter ms"] if has_udp else []) + ["status"]
    rows = []
    for r in runs:
        row = [str(r["point"].get(p, "")) for p in params]
        if pairs:
            row.append(str((r.get("extra") or {}).get("pair", "")))
        if multi:
            row.append(f"{r['run'] + 1}" + (" (warm-up)" if r["warmup"] else ""))
        row.append(_g(r["receiver_bps"]))
        if has_rev:
            row.append(_g(r.get("reverse_receiver_bps")))
        row += [_pct(r["cpu_client"]), _pct(r["cpu_server"]), _pct(r["cpu_host"]), _pct(r["cpu_host_softirq"])]
        if has_retr:
            row.append("" if r.get("retransmits") is None else str(r["retransmits"]))
        if has_udp:
            row += ["" if r.get("lost_percent") is None else f"{r['lost_percent']:.2f}", "" if r.get("jitter_ms") is None else f"{r['jitter_ms']:.3f}"]
        status = "ok" if r["ok"] else f"FAILED: {r['error']}"
        if r["ok"] and r["warnings"]:
            status = "ok; " + "; ".join(r["warnings"])
        row.append(status)
        rows.append(row)
    return head, rows


# Hidden first when the terminal is too narrow for every column (least important first).
DROP_ORDER = ["softirq%", "jitter ms", "loss %", "retrans", "host CPU%", "rev Gbit/s", "run", "server CPU%", "client CPU%"]


def rich_table(title: str, runs: list[dict[str, Any]], width: int) -> Fitted:
    """The results table for a terminal `width` columns wide; values are never broken."""
    head, rows = columns(runs)
    styles = [None if row[-1].startswith("ok") else "red" for row in rows]
    return fit_table(head, rows, width, drop_order=DROP_ORDER, prose=["status"], styles=styles, title=title, title_justify="left")


def markdown(runs: list[dict[str, Any]]) -> str:
    head, rows = columns(runs)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if h != "status" else "---" for h in head) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def csv_text(runs: list[dict[str, Any]]) -> str:
    recs = records(runs)
    params = list(runs[0]["point"]) if runs else []
    flat_fields = [f for f in JSON_FIELDS if f not in ("point", "cpu_extra", "tool_cpu", "settings", "streams")]
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(params + flat_fields)
    for rec in recs:
        vals = [rec["point"].get(p) for p in params]
        vals += ["; ".join(rec[f]) if f == "warnings" else rec[f] for f in flat_fields]
        w.writerow(["" if v is None else v for v in vals])
    return buf.getvalue()


def json_text(runs: list[dict[str, Any]]) -> str:
    return json.dumps(records(runs), indent=2)
