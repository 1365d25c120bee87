"""`nettune run --dry-run`: prints the plan run.dry_run computes (points, the exact
commands, the expected time) without touching anything."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Callable

from rich.markup import escape

from ..commands.dry_run import DryRun, dry_run
from ..commands.eta import human_seconds
from ..studyfile.models import Study
from .app import console
from .k8s_output import print_k8s_plan


def _wrapped(label: str, words: list[str], width: int) -> list[str]:
    """`label` then the words (shell-quoted arguments, or prose), wrapped between words only."""
    indent = " " * (len(label) + 1)
    lines, line = [], label
    for w in words:
        if len(line) + 1 + len(w) > width and line.strip() != label.strip() and line != indent:
            lines.append(line)
            line = indent + w
        else:
            line = f"{line} {w}" if line.strip() else indent + w
    lines.append(line)
    return lines



SEQUENCE_SHOWN = 120  # the run order's first entries (#point, xN tests in a row)

# What a target kind adds to the printed plan, by `[target] kind` (its CLI part): a
# cluster study's kubectl lines and the objects it creates.
KIND_PLANS: dict[str, Callable[[Study, str, str, DryRun], None]] = {"kubernetes": print_k8s_plan}

def print_plan(study: Study, text: str, file: str, db: str | Path | None = None) -> None:
    plan = dry_run(study, text, file, db)
    if study.search is None:
        print_dry_run(plan)
    else:
        from ..commands.search_plan import search_lines
        from ..plan.points import expand_and_check
        from ..run.search_trials import search_length_unknown, search_size

        resolved = expand_and_check(study, text, file)
        print_dry_run(plan, (*search_size(study, resolved, text, file), search_length_unknown(study, resolved)))
        for line in search_lines(study, resolved, text, file):
            console.print(escape(line), highlight=False)
    more = KIND_PLANS.get(study.target.kind)  # a target kind's own part of the plan
    if more is not None:
        more(study, text, file, plan)


def print_dry_run(plan: DryRun, search: tuple[int, float, bool] | None = None) -> None:
    """The plan; `search`: a [search]'s most tests, their seconds and whether a test's length
    is unknown before it runs, which replace the grid's count, time and order (the search
    measures a part of the grid, in its own order)."""
    pairs = f" x {plan.host_pairs} host pairs ({plan.host_pairs} tests per point and run)" if plan.host_pairs is not None else ""
    if search is None:
        console.print(f"[bold]{escape(plan.name)}[/]: {plan.points} points x {plan.runs_per_point} runs{pairs} = {plan.tests} tests, "
                      f"order {plan.order}; target {plan.target_kind}", highlight=False)
        long = f" [yellow](more than {plan.max_hours} hours: `nettune run` needs --allow-long)[/]" if plan.too_long else ""
        console.print(f"expected time: {plan.expected}" + long, highlight=False)
    else:
        tests, seconds, unknown = search
        console.print(f"[bold]{escape(plan.name)}[/]: a search of at most {tests} tests over {plan.points} candidate points{pairs}, "
                      f"in the order the search decides; target {plan.target_kind}", highlight=False)
        long = (f" [yellow](more than {plan.max_hours} hours: `nettune run` needs --allow-long)[/]"
                if seconds > plan.max_hours * 3600 else "")
        when = (f"unknown until the command's first run (only the overhead counted: about {human_seconds(seconds)})" if unknown
                else f"at most about {human_seconds(seconds)}")
        console.print(f"expected time: {when}" + long, highlight=False)
    width = max(console.width, 40)
    if len(plan.sequence) > 1 and search is None:  # the tests in the order the run takes them
        words = [f"#{i}" + (f"x{n}" if n > 1 else "") for i, n in plan.sequence[:SEQUENCE_SHOWN]]
        if len(plan.sequence) > SEQUENCE_SHOWN:
            words.append(f"... ({len(plan.sequence) - SEQUENCE_SHOWN} more)")
        console.print(escape("\n".join(_wrapped("run order:", words, width))), highlight=False, soft_wrap=True)
    for n in plan.common_notes:  # said once, not under every point
        console.print(escape("\n".join(_wrapped("note:", n.split(), width))), highlight=False, soft_wrap=True)
    for p in plan.planned:
        env = [f"{k}={v}" for k, v in p.client_env.items()]
        lines = [f"#{p.index} {p.label}" + (f"  (target: {p.target})" if p.target else "")]
        if p.server_argv:
            lines += _wrapped(f"   {p.roles[0]:<6}", [f"[{p.server_host}]"] + [shlex.quote(a) for a in p.server_argv], width)
        lines += _wrapped(f"   {p.roles[1]:<6}", [f"[{p.client_host}]"] + env + [shlex.quote(a) for a in p.client_argv], width)
        for n in p.own_notes:
            lines += _wrapped("   note  ", n.split(), width)
        console.print(escape("\n".join(lines)), highlight=False, soft_wrap=True)
    console.print("[dim]points are listed in the order the run first reaches them; each REBOOT, VM RESTART and LINK RESET is said "
                  "at the point it comes before[/]" if search is None else
                  "[dim]the search's candidate points (it runs some of them, and the defaults and "
                  "ablations off the grid too)[/]")
    console.print("[dim]dry run: nothing was created or changed (ports are chosen at run time; <user>, <password>, <key>, <dir>: made per study)[/]")
