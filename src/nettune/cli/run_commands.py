"""`nettune run`, `nettune demo`, `nettune schema`, `nettune setup`."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..engines.result import TestResult
from ..errors import NettuneError
from ..plan.points import MAX_POINTS, Slot, expand_and_check
from ..plan.study_file import parse_study
from ..report import table as rt
from ..commands.eta import MAX_HOURS, check_length, human_seconds
from ..studyfile.load import read_study_text
from ..studyfile.models import Study, json_schema
from .app import DB_OPT, app, console, open_writer, print_fitted, print_items, user_errors

if TYPE_CHECKING:  # the summary and the dry run are loaded only by the command that prints them
    from ..commands.summary import RunSummary


class RichProgress:
    """Progress bar with ETA; one line per finished test so the log stays readable. The
    ETA is the run's own (run/plan_time.py: tests as measured so far, reboots, VM restarts
    and idle-power windows still ahead), not a rate of tests per second, which a reboot
    between two tests would make meaningless."""

    def __init__(self) -> None:
        self.bar = Progress(
            TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA {task.fields[eta]}"), console=console, transient=True,
        )
        self.task: Any = None

    def start(self, study: Study, total_tests: int, expected_seconds: float) -> None:
        console.print(f"[bold]{escape(study.name)}[/]: {total_tests} tests, about {human_seconds(expected_seconds)}")
        self.bar.start()
        self.task = self.bar.add_task(study.name, total=total_tests, eta=human_seconds(expected_seconds))

    def eta(self, tests_left: int, seconds_left: float) -> None:
        done = self.bar.tasks[0].completed if self.bar.tasks else 0
        self.bar.update(self.task, total=done + tests_left, eta=human_seconds(seconds_left))

    def test_start(self, slot: Slot, index: int) -> None:
        self.bar.update(self.task, description=slot.point.label() + (" (warm-up)" if slot.warmup else f" run {slot.run}"))

    def test_end(self, slot: Slot, result: TestResult, seconds: float) -> None:
        from ..run.workloads import run_of  # noqa: PLC0415 - loaded by the run already; the CLI starts without it

        said = run_of(result.engine).result_text(result) if result.ok else ""  # its kind's primary value: Gbit/s, a command's seconds
        what = escape(said) if said else f"[red]failed: {escape(result.error or '')}[/]"
        pair = f" {result.pair.pair}" if result.pair is not None and result.pair.pair else ""
        console.print(f"  {escape(slot.point.label())} run {slot.run}{escape(pair)}: {what}", highlight=False)
        self.bar.advance(self.task)

    def message(self, text: str) -> None:
        console.print(text)

    def stop(self) -> None:
        self.bar.stop()


def execute(study: Study, text: str, file: str, db: str, restore_first: bool = False, resume: bool = False,
            cross_check: bool = False, doctor: bool = True) -> None:
    from ..run.study import run_study
    from ..commands.summary import summarize

    prog = RichProgress()
    with open_writer(db, must_exist=resume) as store:
        try:
            outcome = run_study(study, store, text, file, progress=prog, restore_first=restore_first, resume=resume,
                                cross_check=cross_check, doctor=doctor)
        finally:
            prog.stop()
        done = summarize(store, outcome, study.name, db, resume)
    print_summary(done)
    if outcome.search is not None:
        from ..search.answer_text import answer_lines

        print_items(answer_lines(outcome.search), bullet="")


def print_summary(done: RunSummary) -> None:
    print_fitted(rt.rich_table(f"{done.name} (study #{done.study_id})", done.runs, console.width))
    for w in done.warnings:
        print_items([w], bullet="warning: ", style="yellow")
    failed = f", [red]{done.failed} failed[/]" if done.failed else ""
    whole = f" ({len(done.runs)} in study #{done.study_id})" if done.resumed else ""
    console.print(f"{done.tests} tests{failed}{whole}; results in [bold]{escape(done.db)}[/]")
    print_items(done.headline, bullet="")
    said = " ".join(done.headline)
    for c in done.cross_checks:  # the tool-bound points measured again, side by side (once: not again after the headline)
        if c["verdict"] not in said:
            print_items([f"cross-check at {c['label']}: {c['verdict']}"], bullet="")
    console.print("next: " + "   |   ".join(done.next_commands), highlight=False)


@app.command()
@user_errors
def run(
    file: Path = typer.Argument(..., help="Study file (TOML)."),
    db: str = DB_OPT,
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan (points and commands); change nothing."),
    preflight: bool = typer.Option(False, "--preflight", help="Connect and read what the run checks first (tool versions, every knob against its host: qm config, vCPUs, tuned profiles, /proc/cmdline...), then say what the run would refuse, change, restart or reboot; change nothing."),
    restore_first: bool = typer.Option(False, "--restore-first", help="First put back settings an interrupted run left changed on the hosts this study uses (as `nettune restore`)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the latest interrupted study of this file (same text): restore settings first, run only the missing tests."),
    max_points: int = typer.Option(MAX_POINTS, "--max-points", min=1, help="Refuse a sweep of more points than this (counted before anything is expanded)."),
    allow_long: bool = typer.Option(False, "--allow-long", help=f"Run a plan expected to take more than {MAX_HOURS} hours."),
    cross_check: bool = typer.Option(False, "--cross-check", help="After the study, re-run every point analysis marks tool-bound with the other engine and with iperf3 fanned out, and show them side by side with a verdict."),
    doctor: str = typer.Option("on", "--doctor", help="on: audit the hosts before the first point (nettune doctor's checks; stored with the study, listed by the report); off: skip."),
    run_config_commands: bool = typer.Option(False, "--run-config-commands", help="With --dry-run: run the ssh_config `Match exec` commands and inventory scripts the hosts depend on (a real run always runs them, as ssh and Ansible do; a dry run otherwise runs nothing)."),
) -> None:
    """Run a study: every point of the sweep, repeated, stored as it goes."""
    from ..commands.hosts_check import resolution_notes
    from ..studyfile.local_commands import allow_local_commands

    text = read_study_text(file)
    with allow_local_commands(not dry_run or run_config_commands):
        study = parse_study(text, str(file), max_points)
    print_items(resolution_notes(study), bullet="")
    if dry_run and resume:
        raise NettuneError("--dry-run and --resume: give one (--dry-run alone prints the whole plan; `nettune results` shows what a study holds)")
    if preflight and (dry_run or resume):
        raise NettuneError("--preflight reads the hosts, --dry-run only the file, --resume runs: give one")
    if preflight:
        from ..commands.preflight import preflight_report

        print_items(preflight_report(study, text, str(file)), bullet="")
        return
    if dry_run:
        from .dry_run_output import print_plan

        print_plan(study, text, str(file), db)
        if cross_check:  # which points is known only once analysis has their runs
            console.print("[dim]--cross-check: after the study, the points analysis then calls tool-bound are run again with the "
                          "other engine and with iperf3 fanned out, the study's counted runs each (not in the expected time above; "
                          "which points, only the runs can tell)[/]")
        return
    resolved = expand_and_check(study, text, str(file))
    if study.search is not None:
        from ..commands.search_plan import check_search_length

        check_search_length(study, resolved, text, str(file), None if allow_long else MAX_HOURS)
    else:
        check_length(study, resolved, str(file), None if allow_long else MAX_HOURS)
    if doctor not in ("on", "off"):
        raise NettuneError(f"--doctor {doctor!r}: on or off")
    execute(study, text, str(file), db, restore_first, resume, cross_check, doctor == "on")


@app.command()
@user_errors
def demo(db: str = DB_OPT) -> None:
    """Run the built-in demo (examples/quick.toml) on the lab: installs missing tools first."""
    from ..setup_tools import setup

    setup(echo=lambda s: console.print(f"[dim]{escape(s)}[/]"))
    text = resources.files("nettune").joinpath("data/quick.toml").read_text()
    study = parse_study(text, "examples/quick.toml")
    execute(study, text, "examples/quick.toml", db)


@app.command()
@user_errors
def schema() -> None:
    """Print the JSON Schema of the study file format."""
    print(json.dumps(json_schema(), indent=2))


@app.command()
@user_errors
def setup(
    vms: bool = typer.Option(False, "--vms", help="Also what the VM lab needs (QEMU, libvirt, busybox-static, GRUB; Debian's packages, apt-get only), libvirt's libvirt-qemu user, and the guest image built once into /var/cache/nettune/vmlab."),
) -> None:
    """Install the system tools nettune drives (iperf3, iperf, ethtool, openssh, iproute2, procps, sudo)."""
    from ..setup_tools import setup as do_setup, setup_vms

    installed = do_setup(echo=console.print)
    if vms:
        installed += setup_vms(echo=lambda s: console.print(s, highlight=False, soft_wrap=True))
    if installed:
        console.print("installed: " + ", ".join(installed))


