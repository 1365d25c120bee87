"""`nettune run --dry-run`: the plan, with the exact commands, without touching anything."""
from __future__ import annotations

import shlex
from dataclasses import replace
from typing import Any

from rich.markup import escape

from ..engines import get_engine
from ..engines.access import Access, placeholder
from ..knobs.keys import summary as knob_summary
from ..plan.pairs import plan_rounds
from ..plan.points import expand_and_check
from ..spec.models import Study
from .app import console


def _address(study: Study, host: str) -> str:
    if study.target.kind == "lab":
        import ipaddress

        from ..targets.labnet import LabLayout, default_subnet

        spec = study.target
        subnet = ipaddress.ip_network(spec.subnet) if spec.subnet else default_subnet(study.name)
        return LabLayout(study.name, list(spec.hosts), subnet).address(host)  # type: ignore[arg-type]
    if study.target.kind == "ssh":
        return study.target.hosts[host].address  # hosts: name -> SshHostSpec
    return "127.0.0.1"


def planned_access(eng: Any, wl: Any, bind: str) -> tuple[Access, str]:
    """The server's binding and credentials as a run would use them (secrets as names)."""
    bound = bind if wl.bind else None
    if wl.auth is False:
        return Access(bind=bound), "auth = false: servers accept any client"
    if eng.name == "iperf2":
        why = eng.permit_key_usable(wl)
        return (Access(bind=bound), why) if why else (replace(placeholder(bound), user=None, public_key=None), "")
    note = "" if wl.auth is True else "auth auto: credentials used if every host's iperf3 has authentication"
    return replace(placeholder(bound), permit_key=None), note


def _traffic_hosts(study: Study) -> list[str]:
    return list(getattr(study.target, "test_hosts", None) or study.target.hosts)


def _tool_version(study: Study, eng: Any) -> tuple[str, str]:
    """The version the commands are written for: the installed tool's on this machine for
    the lab and loopback (their hosts run this machine's binaries), else an assumption said
    in the notes (a dry run connects to no host)."""
    assumed = "3.16" if eng.name == "iperf3" else "2.1"
    if study.target.kind in ("lab", "local"):
        import shutil
        import subprocess

        if shutil.which(eng.binary):
            r = subprocess.run(eng.version_argv(), capture_output=True, text=True, timeout=10)
            found = eng.version(r.stdout + r.stderr)
            if found:
                return found, ""
        return assumed, f"{eng.binary} is not installed here: commands shown for {eng.name} {assumed}"
    return assumed, f"commands shown for {eng.name} {assumed}; the run uses each host's own version"


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


def print_plan(study: Study, text: str, file: str) -> None:
    from ..run.eta import MAX_HOURS, describe, plan_seconds
    from ..run.study import tests_per_slot

    resolved = expand_and_check(study, text, file)
    per_point = study.repeat.warmup + study.repeat.min_counted
    tests = sum(per_point * tests_per_slot(rp, rp.target) for rp in resolved)
    pairs = f" ({tests // per_point // len(resolved)} host pairs per point)" if tests != per_point * len(resolved) else ""
    console.print(f"[bold]{escape(study.name)}[/]: {len(resolved)} points x {per_point} runs{pairs} = {tests} tests, "
                  f"order {study.repeat.order}; target {study.target.kind}", highlight=False)
    long = plan_seconds(study, resolved)[1] > MAX_HOURS * 3600
    console.print(f"expected time: {describe(study, resolved)}" + (f" [yellow](more than {MAX_HOURS} hours: `nettune run` needs --allow-long)[/]" if long else ""), highlight=False)
    width = max(console.width, 40)
    versions: dict[str, tuple[str, str]] = {}
    blocks: list[tuple[list[str], list[str]]] = []  # (lines, notes) per point
    for rp in resolved:
        wl = rp.workload
        eng = get_engine(wl.engine)
        wl2, warns = eng.warnings(wl)
        port = wl.port or 5201
        version, vnote = versions.setdefault(wl.engine, _tool_version(study, eng))
        tgt = ", ".join(f"{k}={v}" for k, v in rp.target.model_dump().items() if k in ("mtu", "queues"))
        knobs = rp.extra.get("knobs")
        notes_list = warns + ([f"knobs: {knob_summary(knobs)}"] if knobs else []) + ([vnote] if vnote else [])
        server, client = wl.server, wl.client
        if wl.pairs is not None:
            rounds = plan_rounds(wl.pairs, _traffic_hosts(study))
            server, client = rounds[0][0]
            shown = " | ".join(", ".join(f"{a}->{b}" for a, b in rnd) for rnd in rounds)
            mode = "pairs of a round at once" if wl.parallel_pairs else "one pair at a time"
            notes_list.insert(0, f"{sum(map(len, rounds))} pairs in {len(rounds)} rounds ({mode}): {shown}; commands shown for {server}->{client}")
        access, note = planned_access(eng, wl2, _address(study, server))
        if note:
            notes_list.append(note)
        env = [f"{k}={v}" for k, v in eng.client_env(access).items()]
        server_words = [f"[{server}]"] + [shlex.quote(a) for a in eng.server_argv(wl2, port, version, access)]
        client_words = [f"[{client}]"] + env + [shlex.quote(a) for a in eng.client_argv(wl2, _address(study, server), port, version, access)]
        lines = [f"#{rp.point.index} {rp.point.label()}" + (f"  (target: {tgt})" if tgt else "")]
        lines += _wrapped("   server", server_words, width) + _wrapped("   client", client_words, width)
        blocks.append((lines, notes_list))
    common = [n for n in blocks[0][1] if all(n in notes for _, notes in blocks)] if len(blocks) > 1 else []
    for n in common:  # said once, not under every point
        console.print(escape("\n".join(_wrapped("note:", n.split(), width))), highlight=False, soft_wrap=True)
    for lines, notes in blocks:
        for n in notes:
            if n not in common:
                lines += _wrapped("   note  ", n.split(), width)
        console.print(escape("\n".join(lines)), highlight=False, soft_wrap=True)
    console.print("[dim]dry run: nothing was created or changed (ports are chosen at run time; <user>, <password>, <key>, <dir>: made per study)[/]")
