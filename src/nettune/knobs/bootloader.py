"""Where a Linux host keeps its kernel command line, and the text edits nettune makes there.

Three families, found on the host (files present, tools installed, /etc/os-release):
    proxmox  /etc/kernel/cmdline (one line) + `proxmox-boot-tool refresh`
             (Proxmox VE booting with systemd-boot: EFI with ZFS root; admin guide "Host Bootloader")
    grubby   `grubby --update-kernel=ALL --args=K=V` / `--remove-args=K` (Fedora, RHEL 8+:
             BLS entries in /boot/loader/entries/*.conf, the `options` line of each)
    grub     /etc/default/grub GRUB_CMDLINE_LINUX(_DEFAULT) + update-grub (Debian, Ubuntu,
             Proxmox with GRUB) or grub2-mkconfig -o /boot/grub2/grub.cfg (Fedora family without grubby)

A value of a command-line key is a string (`mitigations=off`), True (a bare `quiet`) or None
(absent). Every edit here is a pure function of the file's text, made so that the edit
back gives the same bytes: a token is replaced where it is, a new one goes at the end of
the args with one space, a removed one takes its one separating space with it. The
kernel treats `-` and `_` in a parameter name alike, so keys are compared that way.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..targets.base import Host
from .base import KnobError

KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
# no quotes, spaces, $ or backslash: a value lands in a file a shell sources (/etc/default/grub)
VALUE = re.compile(r"^[A-Za-z0-9_.,:/+=@%-]{1,200}$")
Value = str | bool | None  # "off" | True (bare KEY) | None (absent)

GRUB_DEFAULT = "/etc/default/grub"
KERNEL_CMDLINE = "/etc/kernel/cmdline"
BLS_DIR = "/boot/loader/entries"
_ASSIGN = re.compile(r"^(?P<lead>\s*(?:export\s+)?)(?P<var>GRUB_CMDLINE_LINUX(?:_DEFAULT)?)=(?P<rhs>.*?)(?P<trail>\s*)$")
_OPTIONS = re.compile(r"^(?P<lead>options[ \t]+)(?P<args>.*?)(?P<trail>[ \t]*)$")
RHEL_LIKE = {"fedora", "rhel", "centos", "rocky", "almalinux", "ol", "amzn"}


def same_key(a: str, b: str) -> bool:
    return a.replace("-", "_") == b.replace("-", "_")


def token(key: str, value: Value) -> str:
    return key if value is True else f"{key}={value}"


def value_in(args: str, key: str) -> Value:
    """The value of `key` in a command line (the last occurrence wins, as in the kernel);
    words after a lone `--` go to init and are not kernel parameters."""
    found: Value = None
    for word in args.split():
        if word == "--":
            break
        name, eq, val = word.partition("=")
        if same_key(name, key):
            found = val if eq else True
    return found


def set_in_args(args: str, key: str, value: Value) -> str:
    """`args` with `key` set to value (None: removed), everything else byte for byte."""
    spans = [m for m in re.finditer(r"\S+", args) if same_key(m.group().partition("=")[0], key)]
    if "--" in args.split():  # only kernel parameters, before init's
        cut = next(m.start() for m in re.finditer(r"\S+", args) if m.group() == "--")
        spans = [m for m in spans if m.start() < cut]
    out = args
    keep = spans[-1] if spans and value is not None else None
    for m in reversed(spans):  # from the end, so earlier offsets stay valid
        if m is keep:
            out = out[:m.start()] + token(key, value) + out[m.end():]
            continue
        a, b = m.start(), m.end()
        if out[:a].strip() and out[a - 1] in " \t":  # a word before: the space before it
            a -= 1
        elif out[b:].strip() and out[b] in " \t":  # the first word: the space after it
            b += 1
        out = out[:a] + out[b:]
    if value is not None and keep is None:
        body = out.rstrip()
        out = (body + " " + token(key, value) + out[len(body):]) if body else out + token(key, value)
    return out


def check_value(key: str, value: Value) -> None:
    if not KEY.match(key):
        raise KnobError(f"cmdline:{key}: a kernel parameter name is letters, digits, '_', '-' and '.' (e.g. cmdline:mitigations)")
    if isinstance(value, str) and not VALUE.match(value):
        raise KnobError(f"cmdline:{key}: {value!r} is not a safe kernel parameter value (letters, digits and _.,:/+=@%- only; "
                        "no spaces, quotes or $)")


# -- /etc/default/grub -----------------------------------------------------------------

@dataclass
class _Assign:
    line: int
    var: str
    quote: str
    args: str


def _assignments(text: str) -> list[_Assign]:
    out = []
    for i, line in enumerate(text.split("\n")):
        m = _ASSIGN.match(line)
        if not m:
            continue
        rhs = m.group("rhs")
        if len(rhs) >= 2 and rhs[0] in "\"'" and rhs[-1] == rhs[0] and rhs[0] not in rhs[1:-1]:
            quote, args = rhs[0], rhs[1:-1]
        elif not re.search(r"[\s\"'`$\\;|&()<>]", rhs):
            quote, args = "", rhs
        else:
            raise KnobError(f"{GRUB_DEFAULT} line {i + 1}: {m.group('var')}={rhs} is not a plain quoted string; nettune edits "
                            "only VAR=\"...\" lines (edit it by hand, or simplify the line)")
        if "`" in args or "$(" in args:
            raise KnobError(f"{GRUB_DEFAULT} line {i + 1}: {m.group('var')} runs a command; nettune does not edit such a line")
        out.append(_Assign(i, m.group("var"), quote, args))
    return out


def grub_value(text: str, key: str) -> Value:
    """The value normal boot entries get: GRUB_CMDLINE_LINUX then GRUB_CMDLINE_LINUX_DEFAULT
    (grub-mkconfig's 10_linux passes both, in that order; the last assignment of each wins)."""
    last = {a.var: a.args for a in _assignments(text)}
    return value_in(last.get("GRUB_CMDLINE_LINUX", "") + " " + last.get("GRUB_CMDLINE_LINUX_DEFAULT", ""), key)


def grub_set(text: str, key: str, value: Value) -> str:
    """/etc/default/grub with `key` set (None: removed): changed where it already is (in
    either variable); a new key goes to GRUB_CMDLINE_LINUX_DEFAULT (normal entries, the
    Debian convention), else GRUB_CMDLINE_LINUX, else a new GRUB_CMDLINE_LINUX_DEFAULT line."""
    lines = text.split("\n")
    last = {a.var: a for a in _assignments(text)}
    holders = [a for a in last.values() if value_in(a.args, key) is not None]
    if not holders and value is not None:
        holders = [last.get("GRUB_CMDLINE_LINUX_DEFAULT") or last.get("GRUB_CMDLINE_LINUX")] if last else []
        if not holders or holders[0] is None:
            tail = "" if text.endswith("\n") or not text else "\n"
            return text + tail + f'GRUB_CMDLINE_LINUX_DEFAULT="{token(key, value)}"\n'
    for a in holders:
        m = _ASSIGN.match(lines[a.line])
        assert m is not None
        new = set_in_args(a.args, key, value)
        lines[a.line] = f"{m.group('lead')}{a.var}={a.quote}{new}{a.quote}{m.group('trail')}"
        if not a.quote and " " in new:  # a bare word that became two words needs quotes
            lines[a.line] = f'{m.group("lead")}{a.var}="{new}"{m.group("trail")}'
    return "\n".join(lines)


# -- /etc/kernel/cmdline and BLS entries -------------------------------------------------

def line_value(text: str, key: str) -> Value:
    return value_in(text.split("\n", 1)[0], key)


def line_set(text: str, key: str, value: Value) -> str:
    first, nl, rest = text.partition("\n")
    return set_in_args(first, key, value) + nl + rest


def bls_value(text: str, key: str) -> Value:
    for line in text.split("\n"):
        m = _OPTIONS.match(line)
        if m:
            return value_in(m.group("args"), key)
    return None


def bls_set(text: str, key: str, value: Value) -> str:
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = _OPTIONS.match(line)
        if m:
            lines[i] = m.group("lead") + set_in_args(m.group("args"), key, value) + m.group("trail")
    return "\n".join(lines)


def grubby_default_args(info: str) -> str:
    """The args="..." of `grubby --info=DEFAULT` (grubby prints root= on a line of its own)."""
    args, root = "", ""
    for line in info.splitlines():
        if line.startswith("args="):
            args = line[5:].strip().strip('"')
        elif line.startswith("root="):
            root = line[5:].strip().strip('"')
    return (f"root={root} " if root else "") + args


# -- families ----------------------------------------------------------------------------

@dataclass
class Family:
    name: str  # "proxmox" | "grubby" | "grub"
    files: list[str]  # what nettune journals and puts back byte for byte
    regen: list[list[str]] = field(default_factory=list)  # run after the files changed
    os_id: str = ""

    def value(self, path: str, text: str, key: str) -> Value:
        if self.name == "grub":
            return grub_value(text, key)
        if self.name == "proxmox":
            return line_value(text, key)
        return bls_value(text, key)

    def edit(self, path: str, text: str, key: str, value: Value) -> str:
        if self.name == "grub":
            return grub_set(text, key, value)
        if self.name == "proxmox":
            return line_set(text, key, value)
        return bls_set(text, key, value)

    def grubby_argv(self, key: str, value: Value) -> list[str]:
        if value is None:
            return ["grubby", "--update-kernel=ALL", f"--remove-args={key}"]
        return ["grubby", "--update-kernel=ALL", f"--args={token(key, value)}"]

    def commands(self, key: str, value: Value) -> list[str]:
        """What nettune runs to set key=value here, as shell lines (dry run, docs)."""
        if self.name == "grubby":
            return [shlex.join(self.grubby_argv(key, value))]
        where = ("GRUB_CMDLINE_LINUX_DEFAULT (or the variable that has it)" if self.name == "grub" else "the line")
        change = f"remove {key}" if value is None else f"set {token(key, value)}"
        return [f"edit {self.files[0]}: {change} in {where}"] + [shlex.join(c) for c in self.regen]


def os_release_id(ex: Host) -> str:
    try:
        text = ex.read_text("/etc/os-release")
    except OSError:
        return ""
    m = re.search(r"^ID=\"?([^\"\n]*)\"?", text, re.M)
    return m.group(1).strip().lower() if m else ""


def _exists(ex: Host, path: str) -> bool:
    try:
        ex.read_text(path)
        return True
    except OSError:
        return False


def bls_entries(ex: Host) -> list[str]:
    r = ex.run(["sh", "-c", 'for f in "$1"/*.conf; do [ -f "$f" ] && printf "%s\\n" "$f"; done; true', "sh", BLS_DIR], timeout=15)
    return sorted(ln for ln in r.stdout.splitlines() if ln.endswith(".conf"))


def detect(ex: Host) -> Family:
    """How this host's kernel command line is set, or KnobError saying what was looked for."""
    os_id = os_release_id(ex)
    if _exists(ex, KERNEL_CMDLINE) and ex.which("proxmox-boot-tool"):
        return Family("proxmox", [KERNEL_CMDLINE], [["proxmox-boot-tool", "refresh"]], os_id)
    if ex.which("grubby"):
        entries = bls_entries(ex)
        if entries:
            return Family("grubby", entries, [], os_id)
    if _exists(ex, GRUB_DEFAULT):
        if ex.which("update-grub"):
            regen = [["update-grub"]]
        elif ex.which("grub2-mkconfig"):
            regen = [["grub2-mkconfig", "-o", "/boot/grub2/grub.cfg"]]
        elif ex.which("grub-mkconfig"):
            regen = [["grub-mkconfig", "-o", "/boot/grub/grub.cfg"]]
        else:
            raise KnobError(f"{GRUB_DEFAULT} is there but none of update-grub, grub2-mkconfig, grub-mkconfig is installed")
        if os_id in RHEL_LIKE and ex.which("grub2-mkconfig"):  # Fedora 34+/RHEL 9: one grub.cfg for BIOS and EFI
            regen = [["grub2-mkconfig", "-o", "/boot/grub2/grub.cfg"]]
        return Family("grub", [GRUB_DEFAULT], regen, os_id)
    raise KnobError(f"cannot tell how this host ({os_id or 'unknown OS'}) sets its kernel command line: none of "
                    f"{KERNEL_CMDLINE} + proxmox-boot-tool (Proxmox, systemd-boot), grubby with {BLS_DIR} (Fedora/RHEL), "
                    f"{GRUB_DEFAULT} + update-grub/grub2-mkconfig (Debian/Ubuntu) found")


def family_commands_all(key: str, value: Value) -> list[str]:
    """Before connecting (dry run): the commands of each family, the host's decides."""
    fams = [Family("grubby", [f"{BLS_DIR}/*.conf"]), Family("grub", [GRUB_DEFAULT], [["update-grub"]]),
            Family("proxmox", [KERNEL_CMDLINE], [["proxmox-boot-tool", "refresh"]])]
    label = {"grubby": "Fedora/RHEL", "grub": "Debian/Ubuntu (grub2-mkconfig -o /boot/grub2/grub.cfg where there is no update-grub)",
             "proxmox": "Proxmox with systemd-boot"}
    return [f"{label[f.name]}: " + "; ".join(f.commands(key, value)) for f in fams]


def parse_value(raw: Any) -> Value:
    """A study value: "off" -> "off", true -> bare key, false -> key removed."""
    if raw is True or raw is False:
        return True if raw else None
    return str(raw).strip()
