"""The [knobs] section of a study file, as a file format (the JSON Schema comes from here).

    [knobs]
    "KIND[:ARG][@DEVICE]" = value            # or a table for a command knob
    [knobs.hosts]
    "KIND[:ARG][@DEVICE]" = ["server"]       # which hosts (default: all)

Which kinds exist and what their keys may hold is the knobs registry's knowledge
(knobs/keys.py); this model asks it for every key while the file is read.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

Scalar = Union[bool, int, float, str]


class CommandKnob(BaseModel):
    """A knob nettune has no kind for: your own read/apply/restore commands.

    A string command runs as `sh -c CMD nettune-knob VALUE` (use "$1" for the value);
    a list is an argv and gets VALUE appended. The value is never pasted into shell text.
    """

    model_config = ConfigDict(extra="forbid")
    value: Scalar = Field(description="The value to set; may use sweep parameters, e.g. \"{swap}\".")
    read: str | list[str] = Field(description="Prints the current value on stdout.")
    apply: str | list[str] = Field(description="Sets the value (passed as $1 / the last argument).")
    restore: str | list[str] | None = Field(default=None, description="Puts the original back (given as $1 / last argument); default: apply.")
    scope: Literal["host", "machine"] = Field(default="host", description="host: on each host (inside its namespace in the lab); machine: once on the machine.")


KnobValue = Union[Scalar, CommandKnob]


class KnobsSpec(BaseModel):
    """Settings changed per sweep point and always restored: "KIND[:ARG][@DEVICE]" = value."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, KnobValue] = Field(init=False)  # type: ignore[assignment]
    # an empty list must not quietly mean "every host" (a missing key does)
    hosts: dict[str, Annotated[list[str], Field(min_length=1)]] = Field(
        default_factory=dict, description="Which hosts a knob applies to, by knob key (default: all hosts)."
    )

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        # Checked before field validation, so a bad key gets its own message rather than a
        # type error, and while the file is read: a bad key must be a one-line error naming
        # file, line and field before anything is created (issue 8). Only the knobs registry
        # knows the kinds and their key shapes, and the spec layer must not depend on a later
        # layer when it is imported (spec -> plan -> targets -> knobs): this call-time import
        # is the spec layer's one reference to the knobs layer.
        from ..knobs.keys import check_entry  # noqa: PLC0415

        if isinstance(data, dict):
            for key, value in data.items():
                if key != "hosts":
                    check_entry(key, value.model_dump() if isinstance(value, CommandKnob) else value)
        return data

    @model_validator(mode="after")
    def _check(self) -> "KnobsSpec":
        extra = self.__pydantic_extra__ or {}
        for key in self.hosts:
            if key not in extra:
                raise ValueError(f"hosts: {key!r} is not a knob in [knobs]")
        return self

    def knobs(self) -> dict[str, Any]:
        return dict(self.__pydantic_extra__ or {})
