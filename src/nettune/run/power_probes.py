"""The [probes] section during a study: the external power meter sampled during every
test, and the idle power of each point's machine(s) after its first counted run."""
from __future__ import annotations

from ..probes.base import Probe
from ..probes.powercap import idle_power
from ..probes.registry import meter_probes
from ..store.base import ResultStore
from ..studyfile.models import Study
from ..studyfile.workload import Workload
from ..targets.base import Host, Target
from .workloads import workload_hosts


def meters(study: Study) -> list[Probe]:
    """A fresh meter probe for one test, when the study sets power_command."""
    return meter_probes(study.probes.power_command if study.probes is not None else None)


def idle_hosts(wl: Workload, target: Target) -> dict[str, Host]:
    """The machines to sample: the command's host, or the workload's hosts; hosts that are
    all this machine (lab, local) are one machine, sampled once as "machine"."""
    names = workload_hosts(wl, target)
    hosts = [target.hosts[n] for n in dict.fromkeys(names)]
    if all(h.on_this_machine for h in hosts):
        return {"machine": hosts[0]}
    return {h.name: h for h in hosts}


def sample_idle(study: Study, store: ResultStore, target: Target, wl: Workload, study_id: int, point_id: int) -> None:
    """Sample every machine of the point idle for [probes] idle_power seconds and store it.
    The meter measures the whole plug, so it is read once (with the first machine)."""
    probes = study.probes
    if probes is None or probes.idle_power is None:
        return
    meter = list(probes.power_command) if probes.power_command else None
    for i, (key, host) in enumerate(idle_hosts(wl, target).items()):
        store.add_idle(study_id, point_id, key, idle_power(host, float(probes.idle_power), meter if i == 0 else None))
