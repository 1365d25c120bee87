"""The study file format, as pydantic models (the JSON Schema comes from here).

Fields that may depend on the sweep point accept a template string ("{streams}",
"{queues} * 2" inside braces). The same models validate the file as written and, once
the placeholders are filled for a point, the concrete values (see plan.points.resolve).
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

# A string holding at least one {placeholder}; only valid before a point is resolved.
Template = Annotated[str, StringConstraints(pattern=r"\{[^{}]+\}")]
Mtu = Annotated[int, Field(ge=68, le=65535)]
Queues = Annotated[int, Field(ge=1, le=256)]
Positive = Annotated[int, Field(ge=1)]
NonNegative = Annotated[int, Field(ge=0)]


class Strict(BaseModel):
    """Unknown keys are errors: a typo must never be silently ignored."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class LabTarget(Strict):
    """Built-in lab: one network namespace per host on a Linux bridge (needs root)."""

    kind: Literal["lab"]
    hosts: list[str] = Field(default=["server", "client"], min_length=1, description="Host names; each becomes a namespace nettune-<study>-<host>.")
    mtu: Mtu | Template = Field(default=1500, description="MTU of the bridge and every veth (68..65535).")
    queues: Queues | Template = Field(default=1, description="tx/rx queues of each host's veth; changing it re-creates the veth.")
    subnet: str | None = Field(default=None, description="A /24 inside 198.18.0.0/15; default derived from the study name.")

    @model_validator(mode="after")
    def _check(self) -> "LabTarget":
        if len(set(self.hosts)) != len(self.hosts):
            raise ValueError("host names must be unique")
        for h in self.hosts:
            if not h.replace("-", "").replace("_", "").isalnum() or len(h) > 32:
                raise ValueError(f"host name {h!r}: use letters, digits, '-' or '_' (at most 32)")
        return self


class LocalTarget(Strict):
    """Loopback on this machine: no namespaces, no root needed."""

    kind: Literal["local"]
    hosts: list[str] = Field(default=["server", "client"], min_length=1)


TargetSpec = Annotated[Union[LabTarget, LocalTarget], Field(discriminator="kind")]


class Workload(Strict):
    """One test between a server host and a client host."""

    engine: Literal["iperf3", "iperf2"] = "iperf3"
    server: str = Field(default="server", description="Host that runs the server side.")
    client: str = Field(default="client", description="Host that runs the client side.")
    protocol: Literal["tcp", "udp"] | Template = "tcp"
    duration: Positive | Template = Field(default=10, description="Seconds of measured traffic per test.")
    parallel: Positive | Template = Field(default=1, description="Parallel streams (-P). iperf3 caps at 128.")
    bitrate: str | int | None | Template = Field(default=None, description="Target rate, e.g. '1G', '500M' (UDP default is the tool's own).")
    reverse: bool | Template = Field(default=False, description="Server sends, client receives (-R; iperf2: -R).")
    bidir: bool | Template = Field(default=False, description="Both directions at once (iperf3 --bidir, iperf2 --full-duplex).")
    omit: NonNegative | Template = Field(default=0, description="Seconds omitted at the start (iperf3 -O).")
    window: str | int | None | Template = Field(default=None, description="Socket buffer size (-w), e.g. '4M'.")
    congestion: str | None | Template = Field(default=None, description="TCP congestion control (-C / -Z), e.g. 'bbr'.")
    length: str | int | None | Template = Field(default=None, description="Read/write buffer or datagram length (-l).")
    port: int | None = Field(default=None, ge=1024, le=65535, description="Server port; default picks a free one.")
    timeout: float | None = Field(default=None, gt=0, description="Extra seconds allowed beyond duration+omit before a side is killed.")

    @model_validator(mode="after")
    def _check(self) -> "Workload":
        if self.reverse is True and self.bidir is True:
            raise ValueError("reverse and bidir cannot both be true")
        if self.server == self.client:
            raise ValueError("server and client must be different hosts")
        return self


class Repeat(Strict):
    runs: int = Field(default=1, ge=1, le=1000, description="Counted runs per point.")
    warmup: int = Field(default=0, ge=0, le=100, description="Runs per point stored but not counted.")
    order: Literal["interleaved", "sequential", "shuffled"] = Field(
        default="interleaved",
        description="interleaved: run 1 of every point, then run 2...; so drift is not mistaken for a difference.",
    )
    seed: int | None = Field(default=None, description="Seed for order = 'shuffled' (recorded for reproducibility).")
    pause: float = Field(default=0.0, ge=0, le=3600, description="Seconds to wait between tests (default none).")


SweepValue = Union[list[Union[int, float, str, bool]], str, int, float, bool]


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

    @model_validator(mode="after")
    def _hosts_exist(self) -> "Study":
        hosts = self.target.hosts
        for role in ("server", "client"):
            h = getattr(self.workload, role)
            if h not in hosts:
                raise ValueError(f"workload.{role} = {h!r} is not a target host ({', '.join(hosts)})")
        return self


def json_schema() -> dict[str, Any]:
    schema = Study.model_json_schema()
    schema["title"] = "nettune study file"
    return schema
