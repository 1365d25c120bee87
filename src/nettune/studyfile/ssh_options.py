"""What reading an OpenSSH client config keeps: the values (the first one wins), the lists
that add up, where each came from, and ssh's reason when a line is refused. Shared by the
keyword table (ssh_keywords.py) and its value checks (ssh_keyword_checks.py)."""
from __future__ import annotations

from typing import Any

from .ssh_words import convtime

FLAG = {"yes": 1, "true": 1, "no": 0, "false": 0}
STATES = {
    "yesnoask": {**FLAG, "ask": 2},
    "strict": {"true": "yes", "yes": "yes", "false": "no", "no": "no", "off": "no", "ask": "ask", "accept-new": "accept-new"},
    "yesnoaskconfirm": {**FLAG, "ask": 2, "confirm": 3},
    "family": {"inet": "inet", "inet6": "inet6", "any": "any"},
    "controlmaster": {**FLAG, "auto": 2, "ask": 3, "autoask": 4},
    "tunnel": {"ethernet": 2, "point-to-point": 1, **FLAG},
    "requesttty": {**FLAG, "force": 2, "auto": 3},
    "sessiontype": {"none": 0, "subsystem": 1, "default": 2},
    "canonicalize": {**FLAG, "always": 2},
    "pubkey": {**FLAG, "unbound": 2, "host-bound": 3},
    "compression": {"yes": 1, "no": 0},
}


class Bad(ValueError):
    """ssh's reason for refusing a line (the reader adds the file and line)."""


class Options:
    """The values kept so far (first one wins) and the lists that add up."""

    def __init__(self) -> None:
        self.v: dict[str, Any] = {}
        self.identity_files: list[str] = []
        self.certificate_files: list[str] = []
        self.send_env: list[str] = []
        self.forwards: list[tuple[str, str]] = []
        self.unsupported: list[str] = []  # ssh prints an error for these but goes on
        self.at = "command line"  # the line being read (the reader sets it)
        self.origin: dict[str, str] = {}  # where each kept value (and identity file) was written

    def keep(self, name: str, value: Any, active: bool) -> None:
        if active and name not in self.v:
            self.v[name] = value
            self.origin[name] = self.at

    def where(self, name: str) -> str:
        """'ssh_config FILE line N' (or 'ssh command line') for messages about a value."""
        at = self.origin.get(name, "")
        return f"ssh_config {at}" if " line " in at else f"ssh {at or 'default'}"

    def get(self, name: str, default: Any = None) -> Any:
        return self.v.get(name, default)


def one(words: list[str], what: str = "Missing argument.") -> str:
    if not words or words[0] == "":
        raise Bad(what)
    return words.pop(0)


def time_value(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    arg = words.pop(0) if words else ""
    if arg == "":
        raise Bad("missing time value.")
    value = -1 if arg == "none" else convtime(arg)
    if value is None:
        raise Bad("invalid time value.")
    if value != -1:  # `none` is ssh's "unset" (-1): a later line may still set it
        o.keep(name, value, active)
