"""A search's answer as the lines `nettune run`, `analyze` and the report print."""
from __future__ import annotations

from .answer import Answer, Candidate


def _est(a: Answer, c: Candidate) -> str:
    if c.mean is None:
        return "no value"
    band = f" (95% CI {c.lo * a.scale:.4g} to {c.hi * a.scale:.4g})" if c.lo is not None and c.hi is not None else ""
    return f"{c.mean * a.scale:.4g} {a.unit}{band}, {c.n} run{'s' if c.n != 1 else ''}"


def answer_lines(a: Answer) -> list[str]:
    lines = [f"search ({a.method}, {'higher' if a.higher_is_better else 'lower'} {a.objective} is better): {a.tests} tests, "
             f"{a.spent:g} of a budget of {a.budget} spent; {a.stopped}"]
    lines.append(f"defaults: {_est(a, a.baseline)} at the start")
    if a.winner is not None:
        lines.append(f"winner: {a.winner.label}: {_est(a, a.winner)} in the search (the verdict is on fresh runs at the end)")
    lines.append(f"verdict: {a.verdict_text}")
    if a.drift_text:
        lines.append(f"drift check: {a.drift_text}")
    if a.peak:
        lines.append(a.peak)
    for r in a.runners_up:
        lines.append(f"within noise of the winner: {r.label}: {_est(a, r)}; {r.text}")
    if a.importances:
        lines.append("importances (optuna PED-ANOVA): " + ", ".join(f"{k} {v:.2f}" for k, v in a.importances.items()))
    for f in a.factors:
        lines.append(f"ablation: {f.text}")
    lines += [f"note: {n}" for n in a.notes]
    if not a.complete:
        lines.append("the end phase did not finish: `nettune run FILE --resume` continues the search where it stopped")
    return lines


def persist_caution(a: Answer) -> str:
    """What `persist --best` says beside the files when the winner was not shown better than
    the defaults (no difference shown, borderline, or worse): the files change settings for
    no measured gain ("" when it was shown better)."""
    if a.verdict is None or a.verdict.verdict in ("faster", "better"):
        return ""
    return (f"note: the winner was not shown better than the defaults (verdict: {a.verdict_text}): these files change "
            "settings for no measured gain")
