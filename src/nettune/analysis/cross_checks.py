"""The verdict of a cross-check (`nettune run --cross-check`): the study's own configuration
at a point against the others measured there (the other engine, iperf3 fanned out), each
over the study's counted runs.

The first row is what the study measured; the best other row is compared with it by
Welch's test (analysis/compare.py), so the words state a measured spread with its 95%
interval and p-value, never a bare threshold on two single numbers:
- another configuration faster by more than AGREE_WITHIN over its whole 95% interval:
  the first number measured the tool (status "tool");
- the first the fastest, or an interval that allows at most AGREE_WITHIN more elsewhere
  (a difference, if any, too small to call the first number the tool's): not the tool's
  limit ("path");
- single runs, or an interval across the AGREE_WITHIN line: no verdict ("unknown").
run/cross_check.py stores this text with the rows; analysis recomputes it from the
stored runs, so the run summary, `nettune analyze` and the report say the same.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .compare import compare_values

AGREE_WITHIN = 0.10  # "not the tool's limit" only if the interval allows at most 10% more elsewhere


@dataclass(frozen=True)
class CrossVerdict:
    status: str  # "tool", "path" or "unknown"
    text: str


def _values(row: dict[str, Any]) -> list[float]:
    vals = row.get("values")
    if isinstance(vals, list):
        return [float(v) for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
    g = row.get("gbps")
    return [float(g)] if isinstance(g, (int, float)) and row.get("n") == 1 else []


def _shown(row: dict[str, Any]) -> str:
    if row.get("gbps") is None:
        return f"{row['label']}: failed"
    return f"{row['label']}: {row['gbps']:.1f}" + (f" ({runs_said(row)})" if row.get("n") else "")


def runs_said(row: dict[str, Any]) -> str:
    """"N=2", or "N=1, 1 failed": a configuration with fewer runs than the others says why."""
    failed = row.get("failed") or 0
    return f"N={row.get('n')}" + (f", {failed} failed" if failed else "")


def cross_check_verdict(rows: list[dict[str, Any]]) -> CrossVerdict:
    """The rows side by side (Gbit/s, N) and what they say about the first number."""
    shown = "; ".join(_shown(r) for r in rows)
    good = [r for r in rows if r.get("gbps") is not None]
    if len(good) < 2 or not rows:
        return CrossVerdict("unknown", shown + " -> no comparison (fewer than two configurations measured)")
    first = rows[0]
    others = [r for r in good if r is not first]
    best = max(others, key=lambda r: r["gbps"])
    if first.get("gbps") is None:
        return CrossVerdict("unknown", shown + f" -> the path carries at least {best['gbps']:.1f} Gbit/s (the study's own configuration failed)")
    a, b = _values(first), _values(best)
    if len(a) < 2 or len(b) < 2:
        change = (best["gbps"] / first["gbps"] - 1) * 100 if first["gbps"] else float("nan")
        return CrossVerdict("unknown", shown + f" -> {best['label']} {change:+.0f}% from single runs or runs not stored: no noise "
                            "estimate, so no verdict on the first number; set [repeat] runs = 3 and cross-check again")
    c = compare_values(a, b, labels=(first["label"], best["label"]))
    if c.ci_low is None or c.ci_high is None:  # Fieller: the first configuration's runs too noisy for any finite interval
        return CrossVerdict("unknown", shown + f" -> cannot tell yet ({best['label']} {c.change_pct:+.1f}%, p={c.p_value:.2g}: "
                            f"no finite 95% interval, {first['label']}'s runs are too noisy); add runs and cross-check again")
    lo, hi = (c.ci_low - 1) * 100, (c.ci_high - 1) * 100
    spread = f"{best['label']} {c.change_pct:+.1f}% (95% CI {lo:+.1f} to {hi:+.1f}%, p={c.p_value:.2g}, N={c.n_a}/{c.n_b})"
    if c.verdict == "faster" and lo > AGREE_WITHIN * 100:
        return CrossVerdict("tool", shown + f" -> {spread}: the path carries at least {best['gbps']:.1f} Gbit/s; "
                            f"the first number measured {first['engine']}, not the path")
    if c.verdict == "slower":
        return CrossVerdict("path", shown + f" -> the first configuration was the fastest ({spread}): the first number was not the tool's limit")
    if hi <= AGREE_WITHIN * 100:
        said = "a small but significant difference" if c.verdict == "faster" else "no significant difference"
        return CrossVerdict("path", shown + f" -> {said} ({spread}; at most {hi:+.0f}% more elsewhere, within "
                            f"{AGREE_WITHIN * 100:.0f}%): the first number was not the tool's limit")
    return CrossVerdict("unknown", shown + f" -> cannot tell yet ({spread}: between {lo:+.0f}% and {hi:+.0f}% more elsewhere, "
                        f"across the {AGREE_WITHIN * 100:.0f}% line); add runs and cross-check again")

__all__ = ["AGREE_WITHIN", "CrossVerdict", "cross_check_verdict", "runs_said"]
