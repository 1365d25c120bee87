"""Point parameters of imported tests taken from where users wrote them: the file's name
(`--param-from-name 'queue_(?P<queues>\\d+)'`) and the header lines a script printed before
each test (`--param-from-header 'channels: (?P<streams>\\d+)'`), on top of --set."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import NettuneError


def parse_value(text: str) -> Any:
    """'8' -> 8, '1.5' -> 1.5, 'true' -> True, anything else stays a string."""
    t = text.strip()
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    for conv in (int, float):
        try:
            return conv(t)
        except ValueError:
            pass
    return t


def compile_rules(option: str, patterns: list[str]) -> list[re.Pattern[str]]:
    """Each pattern must compile and name at least one group (the parameter)."""
    out = []
    for p in patterns:
        try:
            rx = re.compile(p, re.M)
        except re.error as e:
            raise NettuneError(f"{option} {p!r}: not a regular expression ({e}); e.g. {option} 'queue_(?P<queues>\\d+)'") from None
        if not rx.groupindex:
            raise NettuneError(f"{option} {p!r}: name the parameter with a group, e.g. (?P<queues>\\d+)")
        out.append(rx)
    return out


def from_name(path: Path, rules: list[re.Pattern[str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for rx in rules:
        m = rx.search(path.name)
        if m is None:
            raise NettuneError(f"{path}: the file name does not match --param-from-name {rx.pattern!r}; rename the file or change the pattern")
        out |= {k: parse_value(v) for k, v in m.groupdict().items() if v is not None}
    return out


def from_header(path: Path, n: int, header: str, body: str, rules: list[re.Pattern[str]]) -> dict[str, Any]:
    """Searched in the lines before the test, then in the test's own text."""
    out: dict[str, Any] = {}
    for rx in rules:
        m = rx.search(header) or rx.search(body)
        if m is None:
            raise NettuneError(f"{path}: test {n}: no line matches --param-from-header {rx.pattern!r}; check the pattern against the lines before that test")
        out |= {k: parse_value(v) for k, v in m.groupdict().items() if v is not None}
    return out
