"""The [workload] section as a model: every field any workload kind reads. Which fields a
kind requires, refuses or reads as host names is the kind's own (studyfile/workload_kind.py:
network_workload.py, command_workload.py), checked by Study when the file is read and by
plan.points at every resolved point."""
from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field, StrictBool, StringConstraints, field_validator, model_validator

from .command_fields import CommandFields
from .field_types import Bytes, Duration, NotBool, Omit, Port, Rate, Strict, Streams, Template

Pairs = Union[
    Annotated[str, StringConstraints(pattern=r"^(mesh|star:[A-Za-z0-9_-]{1,32})$")], Template,  # "star:{os}-a": per point
    Annotated[list[Annotated[list[str], Field(min_length=2, max_length=2)]], Field(min_length=1)],
]


class Workload(Strict, CommandFields):
    """The [workload] section: one test between a server host and a client host (the network
    kind), or one timed command on one host (engine = "command": the command kind). What
    each kind requires of these fields is the kind's (its check in network_workload.py,
    command_workload.py), asked by Study and by each resolved point (plan.points)."""

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
        return self
