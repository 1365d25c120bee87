"""Knob keys as the knobs layer reads them: KIND[:ARG][@DEVICE], checked against the registry.

    [knobs]
    "sysctl:net.core.rmem_max" = "{rmem_max}"
    "offload:gro" = "{gro}"
    "mtu@eth0" = 9000
    "command:swappiness" = {value = "{swap}", read = "cat /proc/sys/vm/swappiness", apply = 'echo "$1" > /proc/sys/vm/swappiness'}
    [knobs.hosts]
    "mtu@eth0" = ["server"]

A key is KIND[:ARG][@DEVICE]; DEVICE defaults to the host's own interface. What a kind's
key may hold (an ARG or not, a DEVICE or not, a table value) is declared by the kind
(base.Kind.takes_arg, needs_device, table_value); nothing here lists kinds by name. The
file format of the section is studyfile/knobs_section.py, which calls check_entry when the
study file is read.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from .base import KnobError, Loc
from .registry import KINDS, NEVER

_KEY = re.compile(r"^(?P<kind>[a-z_]+)(?::(?P<arg>[^@\s]+))?(?:@(?P<device>[A-Za-z0-9_.:-]{1,15}))?$")


@dataclass(frozen=True)
class KnobKey:
    key: str  # as written
    kind: str
    arg: str | None
    device: str | None


def parse_key(key: str) -> KnobKey:
    """Split KIND[:ARG][@DEVICE]; raises ValueError with a message naming the key."""
    m = _KEY.match(key)
    kind = m.group("kind") if m else key.split(":", 1)[0].split("@", 1)[0]
    if kind in NEVER:
        raise ValueError(f"{key!r}: never changed automatically: {NEVER[kind]}; change it by hand (see `nettune knobs list`)")
    if not m:
        raise ValueError(f"{key!r}: a knob is KIND[:ARG][@DEVICE], e.g. 'sysctl:net.core.rmem_max', 'offload:gro', 'mtu@eth0'")
    if kind not in KINDS:
        close = difflib.get_close_matches(kind, list(KINDS), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"{key!r}: unknown knob kind {kind!r}; {hint}known: {', '.join(KINDS)}")
    k, arg, device = KINDS[kind], m.group("arg"), m.group("device")
    if k.takes_arg == "required" and not arg:
        raise ValueError(f"{key!r}: {kind} needs a name after ':', e.g. '{kind}:{k.example_arg}'")
    if k.takes_arg == "never" and arg:
        raise ValueError(f"{key!r}: {kind} takes no ':{arg}' part")
    if not k.needs_device and device:
        raise ValueError(f"{key!r}: {kind} is not per interface; remove '@{device}'")
    try:  # the kind's own checks of what the key names (a sysctl's one spelling, its denylist)
        k.check_loc(Loc(key, kind, arg, device))
    except KnobError as e:
        raise ValueError(str(e)) from None
    return KnobKey(key, kind, arg, device)


def check_entry(key: str, value: Any) -> KnobKey:
    """One `"KEY" = value` line of [knobs] as written: the key, and a table exactly where
    the kind takes one. ValueError naming the key otherwise."""
    k = parse_key(key)
    kind = KINDS[k.kind]
    if kind.table_value != isinstance(value, dict):
        if kind.table_value:
            raise ValueError(f"{key!r}: a {k.kind} knob is a table: {kind.table_hint}")
        raise ValueError(f"{key!r}: expected a value (string, number or true/false), got {type(value).__name__}")
    return k


def knob_items(section: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """(knobs, hosts) from a resolved (filled-in) [knobs] dict."""
    section = dict(section or {})
    hosts = section.pop("hosts", None) or {}
    return section, hosts


def summary(section: dict[str, Any] | None) -> str:
    """One line for a point's filled-in knobs, e.g. for `nettune run --dry-run`:
    'mtu=1500 (server), offload:gro=off, command:swap=10'."""
    knobs, hosts = knob_items(section)
    parts = []
    for key, value in knobs.items():
        v = value.get("value") if isinstance(value, dict) else value
        parts.append(f"{key}{KINDS[parse_key(key).kind].written(v)}" + (f" ({','.join(hosts[key])})" if key in hosts else ""))
    return ", ".join(parts)


def linux_sysctls(key: str) -> list[str] | None:
    """The Linux sysctls knob `key` writes (the kind says: knobs/base.Kind.linux_sysctls);
    None when that cannot be told (a command knob, a tuned profile)."""
    kk = parse_key(key)
    try:
        return KINDS[kk.kind].linux_sysctls(Loc(key, kk.kind, kk.arg, kk.device))
    except KnobError:  # a malformed ARG: the kind's own parse refuses the key, with its message
        return None
