"""The study file format, as pydantic models (the JSON Schema comes from here).

Fields that may depend on the sweep point accept a template string ("{streams}",
"{queues} * 2" inside braces). The same models validate the file as written and, once
the placeholders are filled for a point, the concrete values (see plan.points.resolve).
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Union, get_args

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from .command_workload import CommandWorkload
from .field_types import (BENCH_NET as BENCH_NET, MAX_LAB_HOSTS as MAX_LAB_HOSTS, Bytes as Bytes, Duration as Duration, Mtu as Mtu,
                     NotBool as NotBool, Omit as Omit, Port as Port, Queues as Queues, Rate as Rate, Streams as Streams, Strict as Strict,
                     Template as Template, ThisMachine as ThisMachine)
from .knobs_section import KnobsSpec
from .kubernetes_target import KubernetesTargetSpec  # the kubernetes target spec lives in its own file
from .lab_target import LabTargetSpec
from .network_workload import NetworkWorkload, pairs_hosts as pairs_hosts, pairs_problem as pairs_problem
from .probes_section import ProbesSpec
from .search_section import SearchSpec
from .ssh_hosts import SshHostSpec as SshHostSpec, SshTargetSpec  # the ssh target spec lives in its own file
from .vmlab_target import VmlabTargetSpec  # the VM lab's spec lives in its own file
from .workload import Pairs as Pairs, Workload as Workload
from .workload_kind import WorkloadKind

# Every workload kind's study-file half, by name (studyfile/workload_kind.py); its run half
# has the same name in run/workloads (WORKLOADS).
WORKLOAD_KINDS: dict[str, WorkloadKind] = {"network": NetworkWorkload(), "command": CommandWorkload()}
DEFAULT_KIND = "network"  # an engine no kind names (a template, an imported tool's name) is a traffic tool


def workload_kind(engine: str) -> WorkloadKind:
    """The kind whose `engines` include `engine` (the default kind for any other)."""
    return next((k for k in WORKLOAD_KINDS.values() if engine in k.engines), WORKLOAD_KINDS[DEFAULT_KIND])


def hypervisor_hint(named: list[str], hypervisors: list[str]) -> str:
    """Why a host named for traffic is refused when it is a hypervisor (said with the refusal)."""
    hv = next((h for h in named if h in hypervisors), None)
    if hv is None:
        return ""
    return (f'; {hv!r} has role = "hypervisor", so it is only sampled for CPU during every test and never runs traffic '
            f'(run the test between its VMs, or drop role = "hypervisor" from {hv})')


class LocalTargetSpec(Strict, ThisMachine):
    """Loopback on this machine: no namespaces, no root needed."""

    kind: Literal["local"]
    hosts: list[str] = Field(default=["server", "client"], min_length=1, max_length=MAX_LAB_HOSTS)

    @property
    def queues(self) -> int | None:
        """Queues per host interface the target sets (the lab's [target] queues): none here."""
        return None

    @property
    def over_loopback(self) -> bool:
        return True  # every test goes over this machine's loopback


# Every target spec declares what the layers that see only the study file ask of it:
# kind, hosts, test_hosts, on_this_machine (its hosts run this machine's binaries and
# keep their files here), queues (per host interface, None when the target sets none),
# over_loopback (its tests cross this machine's loopback: ceilings predict them) and
# reboot_refusal (why a boot-time knob on its hosts cannot be set) and study_problem (what
# can never work given the workload's bind and the knobs). What needs more than
# the spec (a lab's layout, connecting) each target kind answers: targets/target_kind.py.
TargetSpec = Annotated[Union[LabTargetSpec, LocalTargetSpec, SshTargetSpec, KubernetesTargetSpec, VmlabTargetSpec], Field(discriminator="kind")]
# the `[target] kind` values, as the union's members declare them (error messages list them)
TARGET_KINDS: tuple[str, ...] = tuple(get_args(m.model_fields["kind"].annotation)[0] for m in get_args(get_args(TargetSpec)[0]))


class Repeat(Strict):
    runs: Annotated[int, NotBool] = Field(default=1, ge=1, le=1000, description="Counted runs per point.")
    warmup: Annotated[int, NotBool] = Field(default=0, ge=0, le=100, description="Runs per point stored but not counted.")
    order: Literal["interleaved", "sequential", "shuffled"] = Field(
        default="interleaved",
        description="interleaved: run 1 of every point, then run 2...; so drift is not mistaken for a difference.",
    )
    seed: Annotated[int, NotBool] | None = Field(default=None, description="Seed for order = 'shuffled' (recorded for reproducibility).")
    pause: Annotated[float, NotBool] = Field(default=0.0, ge=0, le=3600, description="Seconds to wait between tests (default none).")
    # Adaptive repeats (issue 3): instead of a fixed `runs`, keep adding rounds until the
    # 95% CI half-width of every point is within target_margin of its mean.
    min_runs: Annotated[int, NotBool] | None = Field(default=None, ge=2, le=1000, description="Adaptive: counted runs per point before the margin is checked (default 3; needs target_margin).")
    max_runs: Annotated[int, NotBool] | None = Field(default=None, ge=2, le=1000, description="Adaptive: stop a point after this many counted runs even if still noisy (default max(10, min_runs)).")
    target_margin: Annotated[float, NotBool] | None = Field(default=None, gt=0, lt=1, description="Adaptive: stop once the 95% CI half-width is within this fraction of the mean (0.03 = 3%).")

    @model_validator(mode="after")
    def _adaptive(self) -> "Repeat":
        if self.target_margin is None:
            if self.min_runs is not None or self.max_runs is not None:
                raise ValueError("min_runs/max_runs need target_margin (the precision to stop at, e.g. 0.03); for a fixed count use runs")
            return self
        if self.runs > 1:
            raise ValueError("use either runs (a fixed count) or min_runs/max_runs/target_margin (adaptive), not both")
        if self.min_runs is None:
            self.min_runs = min(3, self.max_runs) if self.max_runs is not None else 3
        if self.max_runs is None:
            self.max_runs = max(10, self.min_runs)
        if self.min_runs > self.max_runs:
            raise ValueError(f"min_runs ({self.min_runs}) must not exceed max_runs ({self.max_runs})")
        return self

    @property
    def adaptive(self) -> bool:
        return self.target_margin is not None

    @property
    def min_counted(self) -> int:
        """Counted runs every point gets up front (runs, or min_runs when adaptive)."""
        return self.min_runs if self.adaptive and self.min_runs is not None else self.runs

    @property
    def max_counted(self) -> int:
        """Most counted runs a point can get (for the plan and the ETA)."""
        return self.max_runs if self.adaptive and self.max_runs is not None else self.runs


# An empty list would make a sweep of no points (a study that silently runs nothing).
SweepValue = Union[Annotated[list[Union[int, float, str, bool]], Field(min_length=1)], str, int, float, bool]


STUDY_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"  # also checked where a name comes from a database (knobs/persist.py)


class Study(Strict):
    """A study file, parsed and checked (nettune's own pydantic model): `name`,
    `description`, `target`, `workload`, `sweep`, `repeat`, `knobs`, `probes`, as
    docs/study-file.md describes them. Build one with `load_study` or `parse_study` (they
    also expand and check every point); `model_dump()` gives it back as a dict. Example::

        study = nettune.load_study("examples/quick.toml")
        study.workload.engine, study.repeat.runs       # 'iperf3', 1
        nettune.run_study(study, db="results.db")
    """

    name: str = Field(pattern=STUDY_NAME, description="Study name, used in namespace names and the results database.")
    description: str = ""
    target: TargetSpec
    workload: Workload = Field(default_factory=Workload)
    sweep: dict[str, SweepValue] = Field(
        default_factory=dict,
        description="Lists form a cartesian product; a string is an expression over other sweep parameters.",
    )
    repeat: Repeat = Field(default_factory=Repeat)
    knobs: KnobsSpec | None = Field(default=None, description="Settings changed per point and always restored (see docs/knobs.md).")
    probes: ProbesSpec | None = Field(default=None, description="Extra measurements: idle power after each point, an external power meter (see docs/workloads.md).")
    search: SearchSpec | None = Field(default=None, description="Search the sweep's grid by measuring a fraction of it (see docs/search.md).")
    # the file this study was read from (absolute path) and its text, when it was read from
    # one: the knob journal records its digest (a command knob's restore runs only what it declares)
    _source: tuple[str, str] | None = PrivateAttr(default=None)

    @property
    def source(self) -> tuple[str, str] | None:
        return self._source

    def read_from(self, path: str, text: str) -> "Study":
        self._source = (path, text)
        return self

    @field_validator("workload")
    @classmethod
    def _kind(cls, wl: Workload) -> Workload:
        problem = workload_kind(str(wl.engine)).check(wl)  # what the kind needs of the section's fields
        if problem:
            raise ValueError(problem)
        return wl

    @field_validator("search")
    @classmethod
    def _search(cls, search: SearchSpec | None, info: ValidationInfo) -> SearchSpec | None:
        problem = search.check_sweep(info.data.get("sweep") or {}) if search is not None else None
        if problem:
            raise ValueError(problem)
        return search

    @model_validator(mode="after")
    def _target_problem(self) -> "Study":
        # what a target refuses given the workload and knobs (a Kubernetes pod cannot take node knobs)
        problem = self.target.study_problem(self.workload.bind, self.knobs)
        if problem:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _hosts_exist(self) -> "Study":
        # hosts that may carry traffic (an ssh target's role="hypervisor" hosts are only sampled)
        kind = workload_kind(str(self.workload.engine))
        problem = kind.check_written(self.workload, self.target.test_hosts)
        if problem:
            raise ValueError(problem + hypervisor_hint([h.name for h in kind.host_fields(self.workload)], self.target.hypervisors))
        return self


def json_schema() -> dict[str, Any]:
    schema = Study.model_json_schema()
    schema["title"] = "nettune study file"
    return schema
