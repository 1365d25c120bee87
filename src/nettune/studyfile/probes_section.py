"""The [probes] section: measurements beyond the ones every test makes.

    [probes]
    idle_power = 120                          # seconds of idle power after each point
    power_command = ["/usr/local/bin/plug-watts"]   # an external meter: prints watts

`idle_power`: after a point's first counted run, with its settings still in force, the
power of the test machine is sampled for that many seconds (powercap counters once a
second, and the power command if set); the minimum and median watts are stored.
`power_command` runs on the machine nettune runs on (a smart plug is asked over the
network), once a second during every run and idle window; it prints a number of watts.
"""
from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class ProbesSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    idle_power: Annotated[float, Field(gt=0, le=3600)] | None = Field(default=None, description="Seconds of idle power sampled after each point (min and median watts stored); study C: 120.")
    power_command: Annotated[list[str], Field(min_length=1)] | None = Field(default=None, description="An external power meter: an argv run on this machine that prints watts; sampled every second during each run and idle window.")
