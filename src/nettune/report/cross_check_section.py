"""The report's "Instrument cross-check" section: each point `nettune run --cross-check`
measured again, its configurations side by side (Gbit/s, N) and the verdict."""
from __future__ import annotations

from typing import Any, Callable

from ..analysis.cross_checks import cross_check_verdict, runs_said


def cross_check_md(study: dict[str, Any], md_table: Callable[[list[str], list[list[str]]], list[str]]) -> list[str]:
    checks = study.get("cross_checks") or []
    if not checks:
        return []
    lines = ["", "## Instrument cross-check", "",
             "Points measured again with the other engine and with iperf3 fanned out (by default those where the tool was the bottleneck) "
             "(the same settings; the runs are in study "
             f"`{study['name']}.cross-check`).", ""]
    for c in checks:
        lines += [f"### {c['label']}", ""]
        rows = [[r["label"], "failed" if r["gbps"] is None else f"{r['gbps']:.2f}", runs_said(r).removeprefix("N=")] for r in c["rows"]]
        lines += md_table(["configuration", "Gbit/s", "N"], rows)
        lines += ["", f"Verdict: {cross_check_verdict(c['rows']).text}", ""]  # recomputed from the runs, as analyze does
    return lines
