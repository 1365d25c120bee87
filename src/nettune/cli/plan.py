"""`nettune run --dry-run`: the plan, with the exact commands, without touching anything."""
from __future__ import annotations

import shlex
from dataclasses import replace
from typing import Any

from rich.markup import escape
from rich.table import Table

from ..engines import get_engine
from ..engines.access import Access, placeholder
from ..knobs.spec import summary as knob_summary
from ..plan.pairs import plan_rounds
from ..plan.points import expand_and_check
from ..spec.models import Study
from .main import console


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


def print_plan(study: Study, text: str, file: str) -> None:
    from ..run.eta import MAX_HOURS, describe, plan_seconds

    resolved = expand_and_check(study, text, file)
    per_point = study.repeat.warmup + study.repeat.min_counted
    console.print(f"[bold]{escape(study.name)}[/]: {len(resolved)} points x {per_point} runs = {len(resolved) * per_point} tests, order {study.repeat.order}; target {study.target.kind}")
    long = plan_seconds(study, resolved)[1] > MAX_HOURS * 3600
    console.print(f"expected time: {describe(study, resolved)}" + (f" [yellow](more than {MAX_HOURS} hours: `nettune run` needs --allow-long)[/]" if long else ""), highlight=False, soft_wrap=True)
    t = Table(title_justify="left")
    for h in ("#", "point", "target", "server command", "client command", "notes"):
        t.add_column(h, overflow="fold")
    for rp in resolved:
        wl = rp.workload
        eng = get_engine(wl.engine)
        wl2, warns = eng.warnings(wl)
        port = wl.port or 5201
        version = "3.16" if wl.engine == "iperf3" else "2.1"
        tgt = ", ".join(f"{k}={v}" for k, v in rp.target.model_dump().items() if k in ("mtu", "queues"))
        knobs = rp.extra.get("knobs")
        notes_list = warns + ([f"knobs: {knob_summary(knobs)}"] if knobs else [])
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
        env = "".join(f"{k}={v} " for k, v in eng.client_env(access).items())
        t.add_row(
            str(rp.point.index), rp.point.label(), tgt,
            escape(f"[{server}] " + shlex.join(eng.server_argv(wl2, port, version, access))),
            escape(f"[{client}] " + env + shlex.join(eng.client_argv(wl2, _address(study, server), port, version, access))),
            "; ".join(notes_list),
        )
    console.print(t)
    console.print("[dim]dry run: nothing was created or changed (ports are chosen at run time; <user>, <password>, <key>, <dir>: made per study)[/]")
