"""Link shaping of lab links in a study file: `[target.link]`, `[target.link.HOST]`, `[target.underlay]`.

A link is what joins a lab host (or a node, for the underlay) to its switch. Its values:
rate (bit/s, tc tbf), delay and jitter (milliseconds, netem) and loss (percent, netem).
`delay` is a round-trip time: between two hosts whose links have the same delay, ping
shows that delay (each link carries half of it, a quarter in each direction), so in
general the RTT between two hosts is the mean of their links' delays.
"""
from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Field, WithJsonSchema, model_serializer, model_validator
from pydantic import BaseModel
from pydantic_core import PydanticCustomError

from .rates import parse_rate

TIME_PATTERN = r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(us|ms|s)\s*$"
_TIME = re.compile(TIME_PATTERN)
_TO_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}
MAX_TBF_BPS = (2**32 - 1) * 8  # tbf's rate field is 32-bit bytes/s (~34G)
SHAPE_KEYS = ("rate", "delay", "jitter", "loss")


def _template(value: Any) -> None:
    if isinstance(value, str) and "{" in value:
        raise PydanticCustomError("template", "a template")


def _millis(value: Any) -> Any:
    _template(value)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise PydanticCustomError("time", "expected a time such as '20ms', '500us' or '0.1s', got {v}", {"v": repr(value)})
    if isinstance(value, str):
        m = _TIME.match(value)
        if m is None:
            raise PydanticCustomError("time", "{v} is not a time: write e.g. '20ms', '500us' or '0.1s'", {"v": repr(value)})
        ms = float(m.group(1)) * _TO_MS[m.group(2)]
    else:
        ms = float(value)  # a bare number is milliseconds
    if not 0 <= ms <= 10_000:
        raise PydanticCustomError("time", "{v} is out of range: allowed 0 to 10s", {"v": repr(value)})
    return ms


def _percent(value: Any) -> Any:
    _template(value)
    if isinstance(value, bool):
        raise PydanticCustomError("percent", "expected a percentage such as '0.1%' or 0.1, got {v}", {"v": str(value).lower()})
    text = value.strip().removesuffix("%") if isinstance(value, str) else value
    try:
        pct = float(text)
    except (TypeError, ValueError):
        raise PydanticCustomError("percent", "{v} is not a percentage: write e.g. '0.1%' or 0.1", {"v": repr(value)}) from None
    if not 0 <= pct <= 100:
        raise PydanticCustomError("percent", "{v} is out of range: allowed 0 to 100 (%)", {"v": repr(value)})
    return pct


def _link_rate(value: Any) -> Any:
    _template(value)
    try:
        bps = parse_rate(value)
    except ValueError as e:
        raise PydanticCustomError("rate", "{why}", {"why": str(e)}) from None
    if not 8 <= bps <= MAX_TBF_BPS:
        raise PydanticCustomError("rate", "{v} is out of range: a shaped lab link takes 8 bit/s to 34G (tc tbf's limit)", {"v": repr(value)})
    return bps


Template = Annotated[str, Field(pattern=r"\{[^{}]+\}")]
LinkRate = Annotated[int, BeforeValidator(_link_rate), WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string"}]})]
Millis = Annotated[float, BeforeValidator(_millis), WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string", "pattern": TIME_PATTERN}]})]
Percent = Annotated[float, BeforeValidator(_percent), WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string"}]})]


class LinkShape(BaseModel):
    """One link's shaping; None leaves that part alone (no tbf without rate, no netem
    without delay, jitter or loss)."""

    model_config = ConfigDict(extra="forbid")

    rate: LinkRate | Template | None = Field(default=None, description="Rate of the link in each direction (tc tbf), e.g. '1G' (bits/s, SI); at most 34G.")
    delay: Millis | Template | None = Field(default=None, description="Round-trip time the link gives, e.g. '20ms' (netem; half of it each way over the two hosts' links; a bare number is ms).")
    jitter: Millis | Template | None = Field(default=None, description="Delay variation, e.g. '1ms' (netem; split like delay; needs delay).")
    loss: Percent | Template | None = Field(default=None, description="Packet loss in each direction, e.g. '0.1%' (netem).")

    @model_validator(mode="after")
    def _jitter(self) -> "LinkShape":
        if isinstance(self.jitter, float) and self.jitter > 0 and not self.delay:
            raise ValueError("jitter needs a delay (netem varies the delay); add delay = '20ms'")
        return self

    def values(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump(include=set(SHAPE_KEYS)).items() if v is not None}

    def over(self, base: "LinkShape") -> "LinkShape":
        """This shape with base's values where this one says nothing."""
        return LinkShape(**(base.values() | self.values()))


def _host_tables(schema: dict[str, Any]) -> None:
    # the file writes a host's shape as [target.link.HOST], never as a `hosts` key
    hosts = schema["properties"].pop("hosts", {})
    schema["additionalProperties"] = hosts.get("additionalProperties", True)


class LinkSpec(LinkShape):
    """`[target.link]`: the shape of every host's link, and `[target.link.HOST]` tables
    that change it for one host."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_host_tables)

    hosts: dict[str, LinkShape] = Field(default_factory=dict, description="Per host: [target.link.HOST] with the same keys.")

    @model_validator(mode="before")
    @classmethod
    def _split_hosts(cls, data: Any) -> Any:
        # a table inside [target.link] is a host's own shape; the file has no `hosts` key
        if not isinstance(data, dict):
            return data
        out = {k: v for k, v in data.items() if not isinstance(v, dict)}
        out["hosts"] = {k: v for k, v in data.items() if isinstance(v, dict)}
        return out

    @model_serializer(mode="wrap")
    def _flat(self, handler: Any) -> Any:
        # dumped as written, so that a point's values re-validate through _split_hosts
        data = handler(self)
        return {k: v for k, v in data.items() if k != "hosts"} | dict(data.get("hosts") or {})

    def for_host(self, host: str) -> LinkShape:
        own = self.hosts.get(host)
        base = LinkShape(**LinkShape.values(self))
        return own.over(base) if own is not None else base


class UnderlaySpec(LinkShape):
    """`[target.underlay]`: the links joining nodes (each node's NIC to the underlay switch)."""

    mtu: Annotated[int, Field(ge=1280, le=65535)] | Template = Field(default=1500, description="MTU of the underlay; the VXLAN overlay (and the hosts) get 50 less.")
