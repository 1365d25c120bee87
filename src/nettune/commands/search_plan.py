"""What `nettune run --dry-run` says of a study's [search], and the time limit a search
is held to: its budget, not its grid (a search over 10,000 points may run 40 tests)."""
from __future__ import annotations

from ..errors import SpecError
from ..plan.points import ResolvedPoint
from ..studyfile.models import Study
from .eta import human_seconds


def search_lines(study: Study, resolved: list[ResolvedPoint], text: str, file: str) -> list[str]:
    """The search's plan: method, objective, budget, defaults, and its most tests and time."""
    from ..run.search_trials import search_length_unknown, search_size  # noqa: PLC0415 - scipy and optuna: only for a search
    from ..search.session import plan_search  # noqa: PLC0415

    tests, seconds = search_size(study, resolved, text, file)
    plan = plan_search(study, text, file)
    when = (f"about {human_seconds(seconds)}" if not search_length_unknown(study, resolved) else
            f"their time unknown until the command's first run (only the overhead counted: about {human_seconds(seconds)}; "
            "[workload] duration = SECONDS counts it)")
    return plan.describe() + [f"the search runs at most {tests} tests, {when} (not the grid's "
                              f"{len(resolved)} points: those are its candidates)"]


def check_search_length(study: Study, resolved: list[ResolvedPoint], text: str, file: str, max_hours: float | None) -> None:
    """SpecError when the search's budget may take longer than max_hours (None: no limit)."""
    from ..run.search_trials import search_size  # noqa: PLC0415

    _, seconds = search_size(study, resolved, text, file)
    if max_hours is not None and seconds > max_hours * 3600:
        raise SpecError(file, "search.budget", f"the search may take about {human_seconds(seconds)}, more than {max_hours:g} hours; "
                        "give a smaller budget, or pass --allow-long to run it anyway")
