"""How long a plan takes, said before it starts: `--dry-run` prints it and `nettune run`
refuses a plan longer than MAX_HOURS unless `--allow-long` (a typo such as 1000 runs
of 10000 points should not be found out three weeks later)."""
from __future__ import annotations

from ..errors import SpecError
from ..plan.points import ResolvedPoint
from ..studyfile.models import Study

MAX_HOURS = 72  # longer needs `nettune run --allow-long`


def human_seconds(seconds: float) -> str:
    """'45s', '12m05s', '3h20m', '4d06h', '3.2 years'."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s < 365 * 86400:
        return f"{s // 86400}d{s % 86400 // 3600:02d}h"
    return f"{s / (365.25 * 86400):.1f} years"


def plan_seconds(study: Study, resolved: list[ResolvedPoint]) -> tuple[float, float]:
    """(expected, longest) seconds: longest differs when adaptive repeats may add rounds."""
    from ..run.study import expected_seconds  # noqa: PLC0415 - run.study pulls in scipy; the CLI starts without it

    return expected_seconds(study, resolved), expected_seconds(study, resolved, longest=True)


def describe(study: Study, resolved: list[ResolvedPoint]) -> str:
    """One line for the plan: 'about 2h10m' or 'about 20m, up to 1h05m (adaptive repeats)'."""
    low, high = plan_seconds(study, resolved)
    text = f"about {human_seconds(low)}"
    if high > low:
        text += f", up to {human_seconds(high)} if adaptive repeats run every point to max_runs"
    return text


def check_length(study: Study, resolved: list[ResolvedPoint], file: str, max_hours: float | None = MAX_HOURS) -> None:
    """SpecError if the plan may take longer than max_hours (None: no limit)."""
    if max_hours is None:
        return
    low, high = plan_seconds(study, resolved)
    if high > max_hours * 3600:
        raise SpecError(file, "", f"the plan takes {describe(study, resolved)}, more than {max_hours:g} hours; "
                        "use fewer points, runs or a shorter duration, or pass --allow-long to run it anyway")
