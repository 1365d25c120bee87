"""The study file format, as pydantic models (the JSON Schema comes from here).

Fields that may depend on the sweep point accept a template string ("{streams}",
"{queues} * 2" inside braces). The same models validate the file as written and, once
the placeholders are filled for a point, the concrete values (see plan.points.resolve).
"""
from __future__ import annotations

import ipaddress
from typing import Annotated, Any, Literal, Union

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StringConstraints, WithJsonSchema, field_validator,
                      model_validator)
from pydantic_core import PydanticCustomError

from .knobs_section import KnobsSpec
from .rates import RATE_PATTERN, parse_rate

from .ssh_hosts import SshHostSpec, SshTargetSpec  # noqa: F401 - the ssh target spec lives in its own file
from .kubernetes_target import KubernetesTargetSpec  # the kubernetes target spec lives in its own file
from .command_workload import CommandFields, command_problem, quoting_problem, stray_command_fields
from .probes_section import ProbesSpec


def _not_bool(value: Any) -> Any:
    # TOML has real booleans: `runs = true` is a mistake, not the 1 pydantic would make of it
    if isinstance(value, bool):
        raise PydanticCustomError("not_bool", "expected a number, got {value}", {"value": str(value).lower()})
    return value


NotBool = BeforeValidator(_not_bool)
# A string holding at least one {placeholder}; only valid before a point is resolved.
Template = Annotated[str, StringConstraints(pattern=r"\{[^{}]+\}")]
Mtu = Annotated[int, NotBool, Field(ge=68, le=65535)]
Queues = Annotated[int, NotBool, Field(ge=1, le=256)]
Port = Annotated[int, NotBool, Field(ge=1024, le=65535)]
# Upper bounds are the tools' own (iperf3 3.12 refuses -t above 86400 and -O above 60) or
# far past any sensible test, so a typo such as duration = 100000000 is an error at load.
Duration = Annotated[int, NotBool, Field(ge=1, le=86400)]
Omit = Annotated[int, NotBool, Field(ge=0, le=60)]
Streams = Annotated[int, NotBool, Field(ge=1, le=1024)]
Bytes = Annotated[int, NotBool, Field(ge=1)]  # -w / -l as a number of bytes


def _rate(value: Any) -> Any:
    # a template ("{rate}") is left to the Template member of the union; anything else is
    # read once into bits/s (spec.rates: one meaning for "1G" on every engine)
    if isinstance(value, str) and "{" in value:
        raise PydanticCustomError("template", "a template")
    try:
        return parse_rate(value)
    except ValueError as e:
        raise PydanticCustomError("rate", "{why}", {"why": str(e)}) from None


# bits per second; the schema says what the file may hold: a whole number or a rate text
Rate = Annotated[int, BeforeValidator(_rate), WithJsonSchema({"anyOf": [
    {"type": "integer", "minimum": 0}, {"type": "string", "pattern": RATE_PATTERN}]})]
MAX_LAB_HOSTS = 245  # host i is at .(10+i) of a /24
BENCH_NET = ipaddress.ip_network("198.18.0.0/15")  # the lab's addresses are only ever in here


class Strict(BaseModel):
    """Unknown keys are errors: a typo must never be silently ignored."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ThisMachine:
    """What the target specs whose hosts are this machine (lab namespaces, loopback) have in
    common: every host runs tests, and their binaries and files are this machine's."""

    hosts: list[str]

    @property
    def test_hosts(self) -> list[str]:
        """Hosts that may be a workload's server or client: all of them."""
        return list(self.hosts)

    @property
    def on_this_machine(self) -> bool:
        return True


class LocalTargetSpec(Strict, ThisMachine):
    """Loopback on this machine: no namespaces, no root needed."""

    kind: Literal["local"]
    hosts: list[str] = Field(default=["server", "client"], min_length=1, max_length=MAX_LAB_HOSTS)

    @property
    def queues(self) -> int | None:
        """Queues per host interface the target sets (the lab's [target] queues): none here."""
        return None


from .lab_target import LabTargetSpec  # noqa: E402 - in its own file; it uses Strict and ThisMachine above

# Every target spec declares what the layers that see only the study file ask of it:
# kind, hosts, test_hosts, on_this_machine (its hosts run this machine's binaries and
# keep their files here) and queues (per host interface, None when the target sets none).
TargetSpec = Annotated[Union[LabTargetSpec, LocalTargetSpec, SshTargetSpec, KubernetesTargetSpec], Field(discriminator="kind")]


Pairs = Union[
    Annotated[str, StringConstraints(pattern=r"^(mesh|star:[A-Za-z0-9_-]{1,32})$")], Template,  # "star:{os}-a": per point
    Annotated[list[Annotated[list[str], Field(min_length=2, max_length=2)]], Field(min_length=1)],
]


def pairs_hosts(pairs: Any) -> list[str]:
    """Host names a `pairs` value names explicitly ("mesh" names none)."""
    if isinstance(pairs, str):
        return [pairs.split(":", 1)[1]] if pairs.startswith("star:") else []
    return list(dict.fromkeys(h for pair in pairs for h in pair))


def pairs_problem(pairs: Any, hosts: list[str]) -> str | None:
    """Why a `pairs` value whose hosts exist gives no test over these test hosts (None:
    it gives at least one). plan.pairs makes the rounds; this is what the file must say."""
    if pairs == "mesh" and len(hosts) < 2:
        return f'pairs = "mesh" needs at least two test hosts, got {len(hosts)}'
    if isinstance(pairs, str) and pairs.startswith("star:") and len(hosts) < 2:
        return f"pairs = {pairs!r} gives no pair over hosts {', '.join(hosts)}"
    return None


class Workload(Strict, CommandFields):
    """One test between a server host and a client host (or, engine = "command", one
    timed command on one host: studyfile/command_workload.py)."""

    engine: Literal["auto", "iperf3", "iperf2", "command"] | Template = Field(default="auto", description='The tool: "iperf3", "iperf2", or "auto" (the default): the configuration that is not tool-bound on the hosts at hand (iperf3 >= 3.16, iperf3 fanned out over processes, or iperf2), said and stored with the study (docs/engines.md). Sweepable: engine = "{engine}".')
    processes: Annotated[int, NotBool, Field(ge=1, le=64)] | Literal["auto"] | None | Template = Field(default=None, description='Tool processes per test (server/client pairs on consecutive ports, streams split across them, results summed): lifts iperf3\'s 128-stream cap and its one thread before 3.16. "auto": one per core the client may use, at most the stream count, 1 on iperf3 >= 3.16. Default: 1, or what engine = "auto" picks.')
    server: str = Field(default="server", description="Host that runs the server side.")
    client: str = Field(default="client", description="Host that runs the client side.")
    protocol: Literal["tcp", "udp"] | Template = "tcp"
    duration: Duration | Template = Field(default=10, description="Seconds of measured traffic per test (1..86400, iperf3's limit).")
    parallel: Streams | Template = Field(default=1, description="Parallel streams (-P, 1..1024). iperf3 caps at 128.")
    bitrate: Rate | None | Template = Field(default=None, description="Target rate per stream (-b), e.g. '1G' (10^9 bit/s on every engine; k/M/G/T are powers of 1000, Ki/Mi/Gi/Ti of 1024) or bits/s as a number; stored as bits/s (UDP default is the tool's own).")
    reverse: StrictBool | Template = Field(default=False, description="Server sends, client receives (-R; iperf2: -R).")
    bidir: StrictBool | Template = Field(default=False, description="Both directions at once (iperf3 --bidir, iperf2 --full-duplex).")
    mode: Literal["forward", "reverse", "bidir"] | None | Template = Field(default=None, description='The direction as one value, so it can be swept: "forward" (client sends), "reverse" (as reverse = true) or "bidir" (as bidir = true); mode = "{mode}" with mode = ["forward", "reverse", "bidir"]. Not together with reverse or bidir.')
    omit: Omit | Template = Field(default=0, description="Seconds omitted at the start (iperf3 -O, 0..60).")
    window: str | Bytes | None | Template = Field(default=None, description="Socket buffer size (-w), e.g. '4M'.")
    congestion: str | None | Template = Field(default=None, description="TCP congestion control (-C / -Z), e.g. 'bbr'.")
    length: str | Bytes | None | Template = Field(default=None, description="Read/write buffer or datagram length (-l).")
    port: Port | None | Template = Field(default=None, description="Server port; default 5201 in the lab, a free one on loopback.")
    interval: Annotated[float, NotBool, Field(ge=0.1, le=60)] | None | Template = Field(default=None, description="Seconds between the per-interval reports stored with each test (iperf3/iperf2 -i; 0.1..60, iperf3's limits). Default 1.")
    timeout: Annotated[float, NotBool] | None = Field(default=None, gt=0, le=3600, description="Extra seconds allowed beyond duration+omit before a side is killed (at most 3600). engine = \"command\": seconds each of setup, run and cleanup may take before its process group is killed (default 3600).")
    pairs: Pairs | None = Field(default=None, description='Many hosts: "mesh" (every pair once), "star:HOST" (HOST serves every other host) or [["server", "client"], ...]; server/client are then ignored. Run in rounds where no host is in two tests.')
    parallel_pairs: StrictBool = Field(default=False, description="Run the pairs of a round at the same time (aggregate reported), instead of one after another.")
    auth: Literal["auto"] | StrictBool = Field(default="auto", description='Servers only nettune\'s client can use: iperf3 with a per-study RSA key, user and password; iperf2 TCP -P 1 with a permit key. "auto": where the tool supports it; true: required (error before the study if a host\'s iperf3 lacks it); false: off (old or OpenSSL-less builds).')
    bind: StrictBool = Field(default=True, description="Bind each server to the address its client uses (-B). false: listen on every address (a server host behind NAT, whose address is not its own).")

    @field_validator("auth", mode="before")
    @classmethod
    def _auth(cls, v: Any) -> Any:
        if v != "auto" and not isinstance(v, bool):
            raise ValueError(f'expected "auto", true or false, got {v!r}')
        return v

    @model_validator(mode="after")
    def _check(self) -> "Workload":
        if self.reverse is True and self.bidir is True:
            raise ValueError("reverse and bidir cannot both be true")
        if self.mode in ("forward", "reverse", "bidir"):
            implied = (self.mode == "reverse", self.mode == "bidir")
            if (self.reverse, self.bidir) not in ((False, False), implied):  # a copy of a checked one already holds the implied values
                raise ValueError("mode and reverse/bidir: give one (mode = \"reverse\" is reverse = true, mode = \"bidir\" is bidir = true)")
            # the engines read reverse and bidir: mode sets them (after validation, no re-check)
            object.__setattr__(self, "reverse", self.mode == "reverse")
            object.__setattr__(self, "bidir", self.mode == "bidir")
        if self.engine == "command":  # one host, no server/client pair
            problem = command_problem(self)
            if problem:
                raise ValueError(problem)
            return self
        stray = stray_command_fields(self)
        if stray and "{" not in str(self.engine):  # set for a network tool: a mistake, never silently ignored
            raise ValueError(f"{', '.join(stray)} {'applies' if len(stray) == 1 else 'apply'} to engine = \"command\" only (engine is {self.engine!r})")
        if self.pairs is not None:
            if isinstance(self.pairs, list) and any(a == b for a, b in self.pairs):
                raise ValueError("pairs: each pair needs two different hosts")
            return self
        if self.server == self.client:
            raise ValueError("server and client must be different hosts")
        return self


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


class Study(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", description="Study name, used in namespace names and the results database.")
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

    @model_validator(mode="after")
    def _hosts_exist(self) -> "Study":
        # hosts that may carry traffic (an ssh target's role="hypervisor" hosts are only sampled)
        hosts = self.target.test_hosts
        if self.workload.engine == "command":
            problem = quoting_problem(self.workload)
            if problem:
                raise ValueError(problem)
            h = self.workload.host
            if h is not None and "{" not in h and h not in hosts:
                raise ValueError(f"workload.host = {h!r} is not a target host that runs tests ({', '.join(hosts)})")
            return self
        if self.workload.pairs is not None:
            for h in pairs_hosts(self.workload.pairs):
                if "{" in h:  # follows the sweep: checked at every point (plan.point_hosts)
                    continue
                if h not in hosts:
                    raise ValueError(f"workload.pairs: {h!r} is not a target host that runs tests ({', '.join(hosts)})")
            problem = pairs_problem(self.workload.pairs, hosts)  # e.g. "mesh" over one host
            if problem:
                raise ValueError(problem)
            return self
        for role, h in (("server", self.workload.server), ("client", self.workload.client)):
            if h not in hosts and "{" not in h:  # a template ("{os}-a") is checked at every point
                raise ValueError(f"workload.{role} = {h!r} is not a target host that runs tests ({', '.join(hosts)})")
        return self


def json_schema() -> dict[str, Any]:
    schema = Study.model_json_schema()
    schema["title"] = "nettune study file"
    return schema
