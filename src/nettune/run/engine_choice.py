"""Before a study runs: every point's `engine = "auto"` and `processes = "auto"` made
concrete on the hosts at hand (engines/choice.py has the rules).

Asked once per host, before the target is prepared (probe_run: a lab host's namespace
does not exist yet): each tool's version (a tool missing on a host of the workload is
not a candidate), the cores the client may use (`nproc`: its CPU affinity; half of them
when server and client are the same machine, a lab or loopback, whose processes share
them), and the
client's machine name (`uname -n`), under which `nettune ceiling` stored its loopback
ceilings. Each point's choice is printed once and stored with every test of the point
(`extra["engine_choice"]`).
"""
from __future__ import annotations

from ..engines import ENGINES, NETWORK_ENGINES
from ..engines.choice import Choice, auto_processes, choose, threaded
from ..engines.fanout import split_streams
from ..errors import ToolMissing
from ..plan.points import ResolvedPoint
from ..store.base import ResultStore, StoreReader
from ..studyfile.models import Study
from ..targets.base import HostSet
from ..targets.local import LocalHost
from .workloads import workload_hosts


class HostAnswers:
    """What the hosts said, each asked once: tool versions, cores, machine name."""

    def __init__(self, target: HostSet):
        self.target = target
        self._versions: dict[tuple[str, str], str] = {}
        self._cores: dict[str, int] = {}
        self._machine: dict[str, str] = {}

    def version(self, engine: str, host: str) -> str:
        """The engine's version on `host`; '' when it is not installed there."""
        key = (engine, host)
        if key not in self._versions:
            e, h = ENGINES[engine], self.target.hosts[host]
            found = ""
            if h.which(e.binary) is not None:
                r = h.probe_run(e.version_argv(), timeout=10)
                found = e.version(r.stdout + r.stderr)
            self._versions[key] = found
        return self._versions[key]

    def versions(self, hosts: list[str]) -> dict[str, str]:
        """engine -> its version on the last host (the client), for engines on every host."""
        out = {}
        for name in NETWORK_ENGINES:
            vs = [self.version(name, h) for h in hosts]
            if all(vs):
                out[name] = vs[-1]
        return out

    def cores(self, host: str) -> int:
        if host not in self._cores:
            self._cores[host] = 1  # unknown: one core, so nothing is fanned out on a guess
            for argv in (["nproc"], ["getconf", "NPROCESSORS_ONLN"]):  # nproc honours CPU affinity; getconf: older BSDs
                r = self.target.hosts[host].probe_run(argv, timeout=10)
                if r.returncode == 0 and r.stdout.strip().isdigit():
                    self._cores[host] = int(r.stdout.strip())
                    break
        return self._cores[host]

    def same_machine(self, hosts: list[str]) -> bool:
        """True when every host is the same machine (its node name): a lab or loopback."""
        names = {self.machine(h) for h in hosts}
        return len(names) == 1 and "" not in names

    def machine(self, host: str) -> str:
        if host not in self._machine:
            r = self.target.hosts[host].probe_run(["uname", "-n"], timeout=10)
            self._machine[host] = r.stdout.strip() if r.returncode == 0 else ""
        return self._machine[host]


def choose_engines(resolved: list[ResolvedPoint], target: HostSet, db: ResultStore | StoreReader | None = None, answers: HostAnswers | None = None
                   ) -> tuple[list[ResolvedPoint], dict[int, Choice], list[str]]:
    """(the points with a concrete engine and process count, each auto point's choice,
    one note per distinct choice naming its points). db: the results store, for
    the ceilings `nettune ceiling` measured (None: rules without ceilings)."""
    answers = answers or HostAnswers(target)
    out: list[ResolvedPoint] = []
    choices: dict[int, Choice] = {}
    for rp in resolved:
        wl = rp.workload
        if wl.engine != "auto" and wl.processes != "auto":
            out.append(rp if wl.processes is not None else _with(rp, str(wl.engine), 1))
            continue
        hosts = workload_hosts(wl, target)
        client = hosts[-1]
        streams, machine_cores = int(wl.parallel), answers.cores(client)
        shared = answers.same_machine(hosts)
        cores = max(1, machine_cores // 2) if shared else machine_cores  # lab, loopback: servers and clients share these cores
        if wl.engine == "auto":
            versions = answers.versions(hosts)
            if not versions:
                raise ToolMissing(f"engine = \"auto\" needs iperf3 or iperf2 on every host of the workload ({', '.join(hosts)}): "
                                  "apt-get install iperf3 iperf (or: nettune setup)")
            # a loopback ceiling predicts a loopback path only: not a lab's veths on the
            # same cores (measured: iperf2 won on loopback, one iperf3 process on the lab),
            # nor a path between machines (their NICs, not the loopback, carry it)
            runs = db.ceiling_runs(answers.machine(client)).get("loopback", {}) if db is not None and rp.target.over_loopback else {}
            ceil = {config: {int(p): v for p, v in by_p.items()} for config, by_p in runs.items()}
            c = choose(streams, versions, cores, ceil, wl.processes if isinstance(wl.processes, int) else None, machine_cores)
        else:
            v = answers.version(str(wl.engine), client)
            n = auto_processes(str(wl.engine), v, streams, cores)
            why = f"{wl.engine} {v} is threaded" if wl.engine == "iperf2" or threaded(v) else f"one per core {client} may use"
            c = Choice(str(wl.engine), n, f"processes = \"auto\": {n} for {streams} stream(s) ({why})", v)
        if shared and c.engine == "iperf3" and c.processes > 1 and not isinstance(wl.processes, int) and not c.reason.startswith("fastest"):
            c = Choice(c.engine, c.processes, c.reason + f" (half of {machine_cores} cores: its servers run on the same machine)", c.version)
        choices[rp.point.index] = c
        out.append(_with(rp, c.engine, c.processes))
    return out, choices, notes(resolved, choices)


def _with(rp: ResolvedPoint, engine: str, processes: int) -> ResolvedPoint:
    return ResolvedPoint(rp.point, rp.target, rp.workload.model_copy(update={"engine": engine, "processes": processes}), rp.extra)


def notes(resolved: list[ResolvedPoint], choices: dict[int, Choice]) -> list[str]:
    """One line per distinct choice: what was picked, why, and at which points."""
    by: dict[tuple[str, str], list[str]] = {}
    for rp in resolved:
        c = choices.get(rp.point.index)
        if c is not None:
            by.setdefault((c.label, c.reason), []).append(rp.point.label())
    out = []
    for (label, reason), pts in by.items():
        where = "" if len(pts) == len(resolved) else f" at {'; '.join(pts[:4])}{'...' if len(pts) > 4 else ''}"
        out.append(f"engine auto: {label}{where}: {reason}")
    return out


class _ThisMachine:
    """The hosts of a lab or local study as the dry run may ask them: this machine (they
    run its binaries), asked without creating anything."""

    def __init__(self, names: list[str]):
        self.hosts = {n: LocalHost(n) for n in names}
        self.test_hosts = list(names)


def planned_choices(study: Study, resolved: list[ResolvedPoint], db: ResultStore | StoreReader | None = None) -> tuple[list[ResolvedPoint], list[str]]:
    """For `nettune run --dry-run`: the choice a run would make where it can be known
    without connecting (hosts on this machine), from the same inputs as the run
    (choose_engines, with the ceilings of `db`, the results database opened read-only,
    None when there is none), else iperf3 shown and a note that each host's tools decide
    at run time; and how fanned-out points split their streams."""
    out, said = _planned_choices(study, resolved, db)
    for rp in out:
        n = rp.workload.processes
        if isinstance(n, int) and n > 1:
            split = "+".join(str(x) for x in split_streams(int(rp.workload.parallel), n))
            said.append(f"{rp.point.label()}: {n} {rp.workload.engine} processes on consecutive ports, -P {split} "
                        f"(the command shown is the test's; each process runs its share)")
    return out, said


def _planned_choices(study: Study, resolved: list[ResolvedPoint], db: ResultStore | StoreReader | None = None) -> tuple[list[ResolvedPoint], list[str]]:
    if not any(rp.workload.engine == "auto" or rp.workload.processes == "auto" for rp in resolved):
        return [_with(rp, str(rp.workload.engine), int(rp.workload.processes or 1)) for rp in resolved], []
    if study.target.on_this_machine:
        try:
            out, _, said = choose_engines(resolved, _ThisMachine(list(study.target.hosts)), db)
            return out, said
        except ToolMissing as e:
            return [_with(rp, "iperf3" if rp.workload.engine == "auto" else str(rp.workload.engine), 1) for rp in resolved], [str(e)]
    shown = [_with(rp, "iperf3" if rp.workload.engine == "auto" else str(rp.workload.engine),
                   rp.workload.processes if isinstance(rp.workload.processes, int) else 1) for rp in resolved]
    return shown, ["engine/processes \"auto\": decided on each host's tools when connected (commands shown for iperf3, one process)"]
