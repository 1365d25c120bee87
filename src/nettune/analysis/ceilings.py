"""Is a point at the instrument's ceiling? Judged against what `nettune ceiling` measured
(store/instrument_tables.py, seen as the host fact `ceilings`: path -> config -> -P ->
every run's bits/s), under rules that keep the verdict true:

- the same machine (the client's), the same configuration (engine and process layout:
  "iperf3", "iperf3 x2", "iperf2") and exactly the same stream count: a ceiling at -P 2
  says nothing about -P 16;
- the same path class: "loopback" judges loopback points only, "lab mtu=N queues=Q" lab
  points of that MTU and queue count only. A loopback ceiling never judges a lab or a
  remote path (the kernel work per byte differs: veths, NICs, offloads), and nothing is
  measured for remote paths, so they are never judged by a ceiling;
- never the path the ceiling was measured on: a loopback study is the loopback ceiling's
  own experiment, an unshaped lab point without knobs the lab ceiling's; comparing them
  would be circular;
- "within noise" = not significantly above the ceiling (Welch's test on the point's runs
  and the ceiling's, both two or more) and no more than NEAR below it over the whole 95%
  interval of the difference: only then is the instrument the limit. A point
  significantly above the ceiling is never called ceiling-bound; one clearly below it
  was held by something else; an interval too wide for either is "too noisy to tell"
  (a wide interval that merely includes the ceiling is no evidence of being at it).
"""
from __future__ import annotations

from dataclasses import dataclass
from ..store.records import RunRecord
from ..targets import kind_named
from .compare import compare_values
from .data import METRICS, PointData, StudyData

NEAR = 0.10  # "within noise of the ceiling": not above it, and no more than 10% below over the whole 95% interval


@dataclass(frozen=True)
class CeilingCheck:
    point: int
    status: str  # "within" (instrument-bound), "above", "below", "noisy", "single" (no interval)
    text: str


def processes(r: RunRecord) -> int:
    return r.processes


def config_of(r: RunRecord) -> str:
    return r.engine + (f" x{processes(r)}" if processes(r) > 1 else "")


def client_of(data: StudyData, r: RunRecord) -> str | None:
    if r.client is not None:  # a study over host pairs: this test's client
        return r.client
    wl = data.spec().get("workload") or {}
    return wl.get("client") if isinstance(wl.get("client"), str) else "client"


def path_of(data: StudyData, r: RunRecord) -> tuple[str | None, bool]:
    """(path class of the run's path, whether it is a ceiling's own path: unchanged by
    shaping or knobs), as the study's target kind reads its stored settings. None: a path
    no ceiling judges (remote, a lab with nodes, a kind this nettune does not know)."""
    kind = kind_named(data.study.get("target_kind") or (data.spec().get("target") or {}).get("kind"))
    return kind.path_class(data.spec(), r.settings, client_of(data, r)) if kind is not None else (None, False)


def judge(data: StudyData, p: PointData, label: str) -> tuple[CeilingCheck | None, str | None]:
    """(the point's check against its ceiling, or None; a note why no ceiling applies)."""
    runs = [r for r in p.counted if r.ok]
    if not runs:
        return None, None
    r = runs[0]
    facts = data.facts.get(client_of(data, r) or "") or {}
    table = facts.get("ceilings")
    if not isinstance(table, dict) or not table:
        return None, None
    machine = str(facts.get("machine") or client_of(data, r))
    path, own = path_of(data, r)
    if path is None:
        return None, f"ceilings of {machine} ({', '.join(sorted(table))}) judge no point here: a ceiling judges only a path of its own class, and no ceiling is measured for a remote path"
    if path not in table:
        return None, f"ceilings of {machine} were measured on {', '.join(sorted(table))}, not on this study's path ({path}): they judge no point here"
    if own:
        return None, (f"the {path} ceiling of {machine} was measured on this same path (no shaping, no knobs): comparing a point "
                      "with it would be circular, so it judges no point here")
    config = config_of(r)
    streams = r.n_streams or 1
    ceiling = ((table.get(path) or {}).get(config) or {}).get(str(streams))
    if not isinstance(ceiling, list) or not ceiling:
        return None, None  # not measured at this configuration and -P: nothing to say
    values = p.values(METRICS["total"])
    where = f"at {label}: " if label else ""
    what = f"{machine}'s {path} ceiling for {config} at -P {streams}"
    if len(values) < 2 or len(ceiling) < 2:
        return CeilingCheck(p.idx, "single", f"{where}compared with {what}: single runs, no interval, no verdict"), None
    c = compare_values(ceiling, values, labels=("ceiling", "point"))
    mean, top = sum(values) / len(values), sum(ceiling) / len(ceiling)
    bounded = c.ci_low is not None and c.ci_high is not None  # Fieller: a ceiling too noisy gives no finite interval
    lo, hi = ((c.ci_low or 0.0) - 1) * 100, ((c.ci_high or 0.0) - 1) * 100
    band = f"95% CI {lo:+.1f} to {hi:+.1f}%" if bounded else "no finite 95% interval"
    rel = f"{c.change_pct:+.1f}% ({band}, p={c.p_value:.2g})"
    head = f"{where}{mean / 1e9:.1f} Gbit/s vs {what} ({top / 1e9:.1f}, N={len(ceiling)}): {rel}"
    if c.verdict == "faster":
        return CeilingCheck(p.idx, "above", f"{head}: above the ceiling, so the ceiling does not bound this path"), None
    if not bounded:
        return CeilingCheck(p.idx, "noisy", f"{head}: the ceiling's runs are too noisy to tell whether the point is at it; "
                            "measure it with more runs (`nettune ceiling --runs`)"), None
    if lo >= -NEAR * 100:
        return CeilingCheck(p.idx, "within", f"{head}: within noise of the ceiling (not above it, and at most "
                            f"{NEAR * 100:.0f}% below over the whole interval): the instrument, not the path, is the limit here"), None
    if c.verdict == "slower" or hi < -NEAR * 100:
        return CeilingCheck(p.idx, "below", f"{head}: below the ceiling: this configuration does more on this path class, so "
                            "something else (shaping, knobs) held it"), None
    return CeilingCheck(p.idx, "noisy", f"{head}: too noisy to tell whether it is at the ceiling; add runs (to the study or "
                        "`nettune ceiling --runs`)"), None

def judge_all(data: StudyData, params: list[str]) -> tuple[dict[int, CeilingCheck], list[str]]:
    """Every point's check, and the notes (each said once) on ceilings that judge nothing."""
    checks: dict[int, CeilingCheck] = {}
    notes: list[str] = []
    for p in data.points:
        check, note = judge(data, p, p.label(params) if params else "")
        if check is not None:
            checks[p.idx] = check
        if note and note not in notes:
            notes.append(note)
    return checks, notes


__all__ = ["CeilingCheck", "config_of", "judge", "judge_all", "path_of", "processes"]
