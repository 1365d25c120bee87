"""How long a plan takes, said before it starts: `--dry-run` prints it and `nettune run`
refuses a plan longer than MAX_HOURS unless `--allow-long` (a typo such as 1000 runs
of 10000 points should not be found out three weeks later)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import SpecError
from ..plan.points import ResolvedPoint
from ..studyfile.models import Study

if TYPE_CHECKING:
    from ..run.plan_time import PlanTime

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


def plan_eta(study: Study, resolved: list[ResolvedPoint]) -> PlanTime:
    """The plan's estimate, counted as the run spends it (run/plan_time.py)."""
    from ..run.plan_time import plan_time  # noqa: PLC0415 - the run layer pulls in scipy; the CLI starts without it

    return plan_time(study, resolved)


def plan_seconds(study: Study, resolved: list[ResolvedPoint]) -> tuple[float, float]:
    """(expected, longest) seconds: longest differs when adaptive repeats may add rounds."""
    eta = plan_eta(study, resolved)
    return eta.expected, eta.longest


def parts(eta: PlanTime) -> list[str]:
    """What the estimate is made of beyond the tests ('2 reboots at their reboot_timeout: 20m00s')."""
    out = []
    n = len(eta.reboots)
    if n:
        out.append(f"{n} reboot{'s' if n > 1 else ''} at their reboot_timeout (the most the run waits): {human_seconds(sum(eta.reboots))}")
    n = len(eta.restarts)
    if n:
        out.append(f"{n} VM restart{'s' if n > 1 else ''} at reconnect_timeout (the most the run waits): {human_seconds(sum(eta.restarts))}")
    n = len(eta.idle)
    if n:
        out.append(f"{n} idle-power window{'s' if n > 1 else ''} of {eta.idle[0]:g} s: {human_seconds(sum(eta.idle))}")
    return out


def describe(study: Study, resolved: list[ResolvedPoint], eta: PlanTime | None = None) -> str:
    """One line for the plan: 'about 2h10m (tests 1h10m, 2 reboots ...)', with the
    adaptive upper bound and what is not counted."""
    eta = eta if eta is not None else plan_eta(study, resolved)
    more = parts(eta)
    # a reboot or VM restart is counted at the most the run waits for it: the sum is a bound
    bounded = bool(eta.reboots or eta.restarts)
    text = f"{'at most' if bounded else 'about'} {human_seconds(eta.expected)}"
    if more:
        text += f" (tests {human_seconds(eta.tests)}, " + ", ".join(more) + ")"
    if eta.longest > eta.expected:
        text += f", up to {human_seconds(eta.longest)} if adaptive repeats run every point to max_runs"
    for u in eta.unknown:
        text += f"; not counted: {u}"
    return text


def check_length(study: Study, resolved: list[ResolvedPoint], file: str, max_hours: float | None = MAX_HOURS) -> None:
    """SpecError if the plan may take longer than max_hours (None: no limit), counted as
    the dry run counts it (reboots, VM restarts and idle windows included)."""
    if max_hours is None:
        return
    eta = plan_eta(study, resolved)
    if eta.longest > max_hours * 3600:
        raise SpecError(file, "", f"the plan takes {describe(study, resolved, eta)}, more than {max_hours:g} hours; "
                        "use fewer points, runs or a shorter duration, or pass --allow-long to run it anyway")
