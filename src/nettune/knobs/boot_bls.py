"""BLS entries as GRUB's blscfg reads them (with grubenv), and /etc/kernel/cmdline as
kernel-install reads it.

BLS (the Boot Loader Specification, type #1 entries in /boot/loader/entries/*.conf): a
line is a key, whitespace (spaces or tabs) and a value; `options` may appear several
times and the loader passes them all, joined with a space in their order; `#` starts a
comment line. GRUB's blscfg (Fedora, RHEL: the entries grubby manages) expands `$name`
in options from grubenv (`load_env`): RHEL 8's entries say `options $kernelopts
$tuned_params`, so the kernel command line is in grubenv's `kernelopts` (tuned's
bootloader plugin owns `tuned_params`). An entry without an `options` line gives the
kernel no parameters from the entry.

grubenv (/boot/grub2/grubenv): a 1024-byte block, "# GRUB Environment Block" then one
`name=value` line per variable, padded with '#'. It is changed only with the
distribution's tool (grub2-editenv FILE set name=value), and journaled byte for byte.

/etc/kernel/cmdline: kernel-install (systemd's 90-loaderentry) reads it with
`grep -Gv '^\\s*#' | tr -s "$IFS" ' '`: lines whose first non-blank is `#` are comments,
all other lines are joined with one space. proxmox-boot-tool reads only its first line
(and stops without `root=` in it): where the two would differ, the Proxmox family refuses.
"""
from __future__ import annotations

import re

from .base import KnobError
from .boot_trace import Origin, TChar, Traced

BLS_DIR = "/boot/loader/entries"
GRUBENV = "/boot/grub2/grubenv"
KERNEL_CMDLINE = "/etc/kernel/cmdline"
OPTIONS = re.compile(r"^options(?:[ \t]+|$)")
_VAR = re.compile(r"\$(?:\{(?P<b>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<n>[A-Za-z_][A-Za-z0-9_]*))")
_COMMENT = re.compile(r"^\s*#")
GRUBENV_HEAD = "# GRUB Environment Block\n"
OWNED = {"kernelopts"}  # grubenv variables the kernel command line belongs in; others are another tool's (tuned_params: tuned)


def grubenv_vars(text: str) -> dict[str, str]:
    """name -> value of a grubenv block ('' -> {}); a value with a backslash (GRUB's escape)
    is kept as read and marked unknown by the reader."""
    out: dict[str, str] = {}
    for line in text.split("\n")[1:] if text.startswith(GRUBENV_HEAD) else []:
        if not line or line.startswith("#"):
            continue
        name, eq, value = line.partition("=")
        if eq:
            out[name] = value
    return out


def _var_chars(name: str, env: dict[str, str]) -> list[TChar]:
    value = env.get(name, "")
    if "\\" in value:  # an escaped character: what GRUB makes of it is not nettune's to guess
        return [TChar(c, None) for c in value]
    return [TChar(c, Origin(f"grubenv:{name}", k)) for k, c in enumerate(value)] + [TChar("", Origin(f"grubenv:{name}", len(value), "", bool(value) and not value[-1].isspace()))]


def options_lines(text: str) -> list[tuple[int, int, int]]:
    """(line start, args start, args end) of every `options` line, in order."""
    out, pos = [], 0
    for line in text.split("\n"):
        m = OPTIONS.match(line)
        if m:
            body = line.rstrip(" \t\r")
            out.append((pos, pos + min(m.end(), len(body)), pos + len(body)))
        pos += len(line) + 1
    return out


def bls_traced(path: str, text: str, env: dict[str, str]) -> tuple[Traced, Origin | None]:
    """What the loader passes the kernel from one entry (its options lines joined, grubenv
    variables expanded), and where a new parameter goes: into kernelopts when the entry
    takes its command line from there, else at the end of its last options line (None:
    the entry has no options line)."""
    chars: list[TChar] = []
    anchor: Origin | None = None
    for n, (_, a, b) in enumerate(options_lines(text)):
        if n:
            chars.append(TChar(" ", None))  # the loader joins the lines with a space
        k = a
        for m in _VAR.finditer(text, a, b):
            chars += [TChar(text[i], Origin(path, i)) for i in range(k, m.start())]
            name = m["b"] or m["n"]
            var = _var_chars(name, env)
            chars += var
            if name in OWNED and var and var[-1].origin is not None:
                anchor = var[-1].origin
            k = m.end()
        chars += [TChar(text[i], Origin(path, i)) for i in range(k, b)]
        if anchor is None or not anchor.source.startswith("grubenv:"):
            anchor = Origin(path, b, "", b > a and not text[b - 1].isspace())
    chars.append(TChar("", anchor))
    return Traced(chars), anchor


def kernel_cmdline_traced(path: str, text: str) -> Traced:
    """/etc/kernel/cmdline as kernel-install reads it: comment lines out, the others joined."""
    chars: list[TChar] = []
    pos = 0
    for line in text.split("\n"):
        if line.strip() and not _COMMENT.match(line):
            if chars:
                chars.append(TChar(" ", None))
            body = line.rstrip(" \t\r")
            chars += [TChar(c, Origin(path, pos + i)) for i, c in enumerate(body)]
            chars.append(TChar("", Origin(path, pos + len(body), "", bool(body.strip()))))
        pos += len(line) + 1
    return Traced(chars)


def proxmox_check(path: str, text: str) -> None:
    """proxmox-boot-tool uses the first line alone (and refuses one without root=);
    kernel-install skips comments and joins every line: they must read the same."""
    lines = text.split("\n")
    first = lines[0] if lines else ""
    if _COMMENT.match(first) or not first.strip():
        raise KnobError(f"{path}: line 1 is {'a comment' if first.strip() else 'empty'}; proxmox-boot-tool takes the command line "
                        "from line 1 alone (kernel-install skips comment lines): put the command line on line 1, comments after it")
    extra = [n for n, ln in enumerate(lines[1:], 2) if ln.strip() and not _COMMENT.match(ln)]
    if extra:
        raise KnobError(f"{path}: line {extra[0]} has parameters too; proxmox-boot-tool reads line 1 only, kernel-install "
                        "every line: join them on line 1")


def new_options_line(text: str, tok: str) -> str:
    """An entry without an options line, given one (at its end)."""
    return text + ("" if text.endswith("\n") or not text else "\n") + f"options {tok}\n"


def set_grubenv_argv(tool: str, path: str, name: str, value: str) -> list[str]:
    return [tool, path, "set", f"{name}={value}"]
