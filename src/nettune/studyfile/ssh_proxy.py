"""`ProxyCommand ssh [options] -W %h:%p [user@]bastion`: a jump host written the old way.

That command makes ssh start another ssh to the bastion and ask it to forward to the
host, which is what ProxyJump does (and what nettune does itself, checking the bastion's
host key with its own rules). So this one form is read as a jump: the bastion resolved as
that inner `ssh [options] bastion` would resolve it (its own config: the default files,
or its -F), with its -l/-p/-i/-J/-o options. Any other ProxyCommand (nc, a SOCKS proxy, a
cloud CLI, sshpass) runs a program nettune cannot stand in for, and is refused.
"""
from __future__ import annotations

import os
import shlex
from pathlib import Path

from .ssh_resolve import CommandLine

_WITH_VALUE = set("bcDeEFiIJlLmoOpPQRSwWB")
_HARMLESS = set("46aACgkKqTtvxXY")


def proxy_as_jump(command: str, host: str, port: int, user: str, original: str) -> tuple[CommandLine, str] | None:
    """(the inner ssh's command line, its destination) when `command` is `ssh ... -W %h:%p X`."""
    try:
        words = shlex.split(_shell_comment_cut(command))
    except ValueError:
        return None
    if words[:1] == ["exec"]:
        words = words[1:]
    if not words or os.path.basename(words[0]) != "ssh":
        return None
    tokens = {"h": host, "p": str(port), "r": user, "n": original, "%": "%"}
    cl, dest, forward = CommandLine(), None, None
    i = 1
    while i < len(words):
        w = _expand(words[i], tokens)
        i += 1
        if w is None:
            return None
        if not w.startswith("-") or len(w) < 2:
            if dest is not None:
                return None  # a remote command (ssh bastion nc %h %p): not a plain forward
            dest = w
            continue
        flag, value = w[1], w[2:]
        if flag in _WITH_VALUE and not value:
            if i >= len(words):
                return None
            value, i = _expand(words[i], tokens), i + 1
            if value is None:
                return None
        elif flag not in _WITH_VALUE and value:
            words.insert(i, "-" + value)
            value = ""
        if flag == "W":
            forward = value
        elif flag in "lpiJ":
            cl.args.append((flag, value))
        elif flag == "o":
            cl.args.append(("o", value))
        elif flag == "F":
            cl.config = Path(os.path.expanduser(value))
        elif flag not in _HARMLESS:
            return None
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if dest is None or forward not in (f"{host}:{port}", f"[{host}]:{port}", target):
        return None
    if "@" in dest:
        u, _, dest = dest.rpartition("@")
        cl.args.append(("l", u))
    return cl, dest


def _shell_comment_cut(command: str) -> str:
    """The command without its shell comment: ssh runs it with `$SHELL -c "exec ..."`, where an
    unquoted `#` starting a word begins a comment (`ssh -W %h:%p gw  # via gw` reaches gw)."""
    quote, i = "", 0
    while i < len(command):
        c = command[i]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"':
                i += 1
        elif c in "'\"":
            quote = c
        elif c == "\\":
            i += 1
        elif c == "#" and (i == 0 or command[i - 1] in " \t"):
            return command[:i]
        i += 1
    return command


def _expand(word: str, tokens: dict[str, str]) -> str | None:
    out, i = [], 0
    while i < len(word):
        if word[i] == "%":
            t = word[i + 1: i + 2]
            if t not in tokens:
                return None
            out.append(tokens[t])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return "".join(out)
