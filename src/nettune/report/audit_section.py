"""The report's host audit: what `nettune run` stored from its doctor pass (facts[host]
["doctor"]), warnings and problems first, for both the markdown and the HTML report."""
from __future__ import annotations

from typing import Any


def audit_rows(facts: dict[str, Any]) -> list[list[str]]:
    """[severity, host, check, seen, fix] of every warning and problem, problems first."""
    rows = []
    for host, f in facts.items():
        for x in f.get("doctor") or []:
            if x.get("severity") in ("warn", "problem"):
                rows.append([x["severity"], host, x["check"], x["seen"], x.get("fix") or "-"])
    return sorted(rows, key=lambda r: (r[0] != "problem", r[1], r[2]))
