"""The protocol every kind of knob follows (modelled on tuned's plugins, but the
original values go to an on-disk journal instead of RAM).

    parse(loc, raw)            static check and normalisation of a value from the study file
    scope(ex, loc)             "ns" (lives in the host's network namespace) or "machine"
    validate(ex, loc, v, ctx)  read-only checks against the real host (or a scratch namespace)
    read(ex, loc)              the current value, JSON-able (what the journal stores)
    apply(ex, loc, v)          set it (must_read_back: a value that does not read back fails the point)
    restore(ex, loc, orig)     put an original back (default: apply it)
    at_boot kinds (takes effect at the next boot; boot_batch.py reboots each host once):
    configure(ex, loc, v)      apply without the reboot (default: apply)
    unconfigure(ex, loc, orig) restore without the reboot (default: restore)
    needs_boot(ex, loc, v)     is the running system without v (default: False)
    check_booted(ex, loc, v)   NotInForce unless the host now runs with v (default: nothing)
    same(a, b)                 are two values equal once normalised
    check_loc(loc)             static checks of the ARG and device (load, dry run, restore)
    check_value / check_reading  a journaled value, untrusted, re-checked before restore acts
    commands(loc, v)           shell lines that set v by hand (persist, manual restore)
    show(v)                    a value as one short line (messages, `nettune knobs show`)
    persisted(loc, v)          the value as sysctl.d / tuned / udev / NetworkManager / shell forms
    acts_on_interface(loc)     is the setting void once loc.device is re-created
    slot_key(loc)              what tells two settings of the kind apart beyond KIND:ARG@DEV
    forms(os, loc, v)          the settings it is on a host of that OS (OS-neutral kinds)
    disruption(loc)            what a change does beyond the setting: a host reboot, a VM
                               restart, a link reset (announced in the plan, opted into per host)
    vm_field / vm_name(loc)    hypervisor kinds: the VM they act on, as a study host names it
    vm_macs(ex, loc)           hypervisor kinds: the MACs of the VM's NICs that tie it to its host, as
                               the hypervisor's config says it (--preflight ties it to the study host)
    check_offline(loc, v, q)   checks of a parsed value that need the point (lab queues), no host
    catalog()                  rows for `nettune knobs list`
and declares its key's shape (takes_arg, example_arg, needs_device, table_value), which the
study file's key check reads through the registry.

`ex` is a targets Host (targets/base.py): knob code uses only what that protocol declares
(run, read_text, write_text, os, netns, interface, reach) and never imports a target
class; hosts of this machine without a target (the machine itself, a namespace named
in the journal, scratch namespaces) come from targets/machine.py and Target.scratch.
Scope and place are decided by the knobs layer (items.py, places.py), not by the kind.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..errors import NettuneError
from ..targets.base import Host


class KnobError(NettuneError):
    """A knob cannot be read, validated or applied; the message is one line."""


class NotInForce(KnobError):
    """The change was made (and journaled) but the host runs without it, e.g. it booted
    without the edited command line: the point fails, the study goes on."""


@dataclass(frozen=True)
class Loc:
    """Where one knob acts: its key as written, kind, argument and device."""

    key: str
    kind: str
    arg: str | None = None
    device: str | None = None
    spec: Any = field(default=None, compare=False, hash=False)  # command knobs: their commands

    def record(self) -> dict[str, Any]:
        rec = {"key": self.key, "kind": self.kind, "arg": self.arg, "device": self.device}
        if self.spec is not None:
            rec["spec"] = self.spec
        return rec

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> "Loc":
        return cls(rec["key"], rec["kind"], rec.get("arg"), rec.get("device"), rec.get("spec"))


# an ARG nettune acts on (a sysctl's kind checks its own names): one word, never an option
# (leading '-'), never a path ('/', or a leading '.')
SAFE_ARG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.,:+-]{0,127}")
# an interface name as the kernel takes it (IFNAMSIZ 16 with its NUL), never '.' or '..'
IFNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,14}")


def check_plain(loc: Loc, value: Any, depth: int = 0) -> None:
    """A journaled value is plain data of a few levels: texts of one line (a file's text
    is the one multi-line value, kept by its kind), numbers, true/false, lists, tables."""
    if depth > 4:
        raise KnobError(f"{loc.key}: the journaled value is nested deeper than any reading nettune writes")
    if isinstance(value, str):
        if len(value) > 4096 or any(ord(c) < 32 and c != "\t" or c == "\x7f" for c in value):
            raise KnobError(f"{loc.key}: the journaled value {value[:40]!r} is not one line of text")
    elif isinstance(value, dict):
        for k, v in value.items():
            check_plain(loc, k, depth + 1)
            check_plain(loc, v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            check_plain(loc, v, depth + 1)
    elif value is not None and not isinstance(value, (bool, int, float)):
        raise KnobError(f"{loc.key}: the journaled value is not plain data")


# What a change of a kind may do to its host beyond the setting itself, and the host field
# that allows it (the same form as allow_reboot): the plan announces each at the point
# where it happens, with its commands and its restore, and the study file refuses it on a
# host without the opt-in (knobs/offline.py).
REBOOT, VM_RESTART, LINK_RESET = "reboot", "VM restart", "link reset"
OPT_INS = {REBOOT: "allow_reboot", VM_RESTART: "allow_vm_restart", LINK_RESET: "allow_link_reset"}


@dataclass(frozen=True)
class Disruption:
    """One kind of disruption a knob change causes: `what` (REBOOT, VM_RESTART or
    LINK_RESET), `when` (the condition, said in the plan: 'when the change stays pending'),
    and what it does, in a few words."""

    what: str
    when: str = ""
    does: str = ""

    @property
    def opt_in(self) -> str:
        return OPT_INS[self.what]


@dataclass
class Ctx:
    """What validation may know beyond the value: CPU count, lab queues, scratch mode."""

    cpus: int = 1
    queues: int | None = None  # the lab's queue count for this point (channels upper bound)
    scratch: bool = False  # ex is a throw-away namespace: validate may change things there
    spare: Host | None = None  # a throw-away namespace holding spare_dev (targets Scratch)
    spare_dev: str = ""  # an interface nothing uses, to try a value on
    host: str = ""
    notes: list[str] = field(default_factory=list)


def catalog_row(kind: str, key: str, scope: str, what: str, default: str, tuned: str, restart: str, risk: str, freebsd: str = "") -> dict[str, str]:
    return {"kind": kind, "key": key, "scope": scope, "what": what, "default": default, "tuned": tuned, "restart": restart, "risk": risk, "freebsd": freebsd}


class Kind:
    """One kind of knob. Everything about it lives in its class: the shape of its key
    (the spec's key check and `nettune knobs list` read these attributes through the
    registry), how it is checked, read, set and put back, shown, and persisted."""

    name = ""
    takes_arg = "optional"  # KIND:ARG: "required", "never" or "optional"
    example_arg = ""  # shown when a required ARG is missing ('sysctl:net.core.rmem_max')
    needs_device = False  # acts on an interface (KIND@DEV, default: the host's interface); else no @DEV
    host_wide = False  # lives on the machine even when the host is a namespace
    table_value = False  # the value is a table (command knobs), not a string, number or boolean
    table_hint = ""  # what that table looks like (the error for a scalar value)
    # a value that does not read back after apply fails the point (ifconfig and ethtool
    # can return 0 and leave a setting unchanged); else the run only says so
    must_read_back = False
    # takes effect at the next boot: several changes of a host (a point setting two
    # cmdline keys, a restore putting several back) are configured first, then the host
    # is rebooted once for all of them (boot_batch.py); apply/restore alone reboot too
    at_boot = False

    # restore runs this kind's commands only as the study file declares them: a journal
    # record of it is acted on only while that file is unchanged and names it (verify.py)
    declared_only = False
    # order within a point, lowest first: a setting that replaces others comes before them
    # (an amd_pstate mode switch replaces the CPUs' cpufreq policies: 0; a tuned profile sets
    # governor, EPP and sysctls: 1; single settings, which the study means to win: 2)
    apply_order = 2

    # hypervisor kinds (run on a host with role = "hypervisor", act on one of its VMs): the
    # study host field that names that VM (`vmid` for Proxmox, `domain` for libvirt), so a
    # VM the knob acts on is tied to a study host; "" for every other kind
    vm_field = ""

    def parse(self, loc: Loc, raw: Any) -> Any:
        return raw

    def disruption(self, loc: Loc) -> Disruption | None:
        """What a change of this setting does beyond the setting itself (None: nothing)."""
        return None

    def vm_name(self, loc: Loc) -> str:
        """Hypervisor kinds: the VM the knob acts on, as a study host's `vm_field` names it."""
        return ""

    def vm_macs(self, ex: Host, loc: Loc) -> list[str]:
        """Hypervisor kinds: the MAC addresses of the VM's NICs that tie it to its study
        host (the NIC the knob acts on; every NIC for a knob of the whole VM), read from
        the hypervisor `ex` ([]: it does not say); KnobError when it cannot be read."""
        return []

    def check_offline(self, loc: Loc, value: Any, queues: int | None) -> None:
        """Checks of a parsed value that need the point but no host (when the study file is
        read, in the dry run and the run alike): KnobError. `queues`: the queue count the
        target gives the host's interface at this point (the lab's [target] queues), None
        where the target sets none. Default: nothing beyond parse."""

    def restore_commands(self, loc: Loc) -> list[str]:
        """The restore as the plan says it before anything is read (the run puts back the
        journaled original): the commands, with the original as <original>. Default: none
        said (the plan says the journaled value goes back)."""
        return []

    def check_loc(self, loc: Loc) -> None:
        """Static checks of where a knob acts, from the key alone: when the study file is
        read (keys.parse_key), in the dry run and before a restore acts on a journal
        record. KnobError (one line) for a place the kind must never act on. Default: an
        ARG as the kind takes it, one word that cannot read as an option or a path; a
        device that is an interface name."""
        if self.takes_arg == "required" and not loc.arg:
            raise KnobError(f"{loc.key}: {self.name} needs a name after ':', e.g. '{self.name}:{self.example_arg}'")
        if self.takes_arg == "never" and loc.arg:
            raise KnobError(f"{loc.key}: {self.name} takes no ':{loc.arg}' part")
        if loc.arg is not None and not SAFE_ARG.fullmatch(loc.arg):
            raise KnobError(f"{loc.key}: {loc.arg!r} is not a name nettune acts on (letters, digits and _ . , : + -, "
                            "not starting with '-' or '.', no '/')")
        if loc.device is not None and not IFNAME.fullmatch(loc.device):
            raise KnobError(f"{loc.key}: {loc.device!r} is not an interface name")
        if loc.device is not None and not self.needs_device:
            raise KnobError(f"{loc.key}: {self.name} is not per interface")

    def check_value(self, loc: Loc, value: Any) -> None:
        """A value nettune wrote, read back from the journal (a record's `new`): KnobError
        unless the kind's parse accepts it. Default: parse."""
        self.parse(loc, value)

    def check_reading(self, loc: Loc, value: Any) -> None:
        """A value nettune read from a host, read back from the journal (an original, or
        what it read after its change): KnobError unless it has the shape this kind's read
        gives, with nothing in it that could name another place. Default: a scalar that
        the kind's parse accepts (a kind whose read gives a table checks its own)."""
        check_plain(loc, value)
        if isinstance(value, (dict, list)):
            raise KnobError(f"{loc.key}: the journaled reading is a {type(value).__name__}; this knob reads one value")
        self.parse(loc, value)

    def split(self, loc: Loc, parsed: Any) -> tuple[Loc, Any]:
        """(loc, value) from a parsed value; command knobs move their commands into loc."""
        return loc, parsed

    def scope(self, ex: Host, loc: Loc) -> str:
        return "machine" if self.host_wide else "ns"

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        self.read(ex, loc)

    def read(self, ex: Host, loc: Loc) -> Any:
        raise NotImplementedError

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        raise NotImplementedError

    def restore(self, ex: Host, loc: Loc, original: Any) -> None:
        self.apply(ex, loc, original)

    def configure(self, ex: Host, loc: Loc, value: Any) -> None:
        """at_boot kinds: apply's edit without its reboot (the value is in force once the
        host has booted). Default: apply."""
        self.apply(ex, loc, value)

    def unconfigure(self, ex: Host, loc: Loc, original: Any) -> None:
        """at_boot kinds: restore's edit without its reboot. Default: restore."""
        self.restore(ex, loc, original)

    def needs_boot(self, ex: Host, loc: Loc, value: Any) -> bool:
        """at_boot kinds: does the running system lack `value` (a study value or a
        journaled reading), so that a reboot is due? Default: no."""
        return False

    def check_booted(self, ex: Host, loc: Loc, value: Any) -> None:
        """at_boot kinds, after the reboot: NotInForce (with the reason) unless the host
        runs with `value`. Default: nothing to check."""

    def same(self, a: Any, b: Any) -> bool:
        return a == b

    def looks_like(self, current: Any, new: Any) -> bool:
        """Is `current` what applying `new` produces? (used when no read-back was journaled)"""
        return self.same(current, new)

    def between(self, current: Any, original: Any, new: Any) -> bool:
        """Is `current` part original, part nettune's value: a write of several parts (one
        per queue, per IRQ) that a kill -9 interrupted, while applying or restoring? Such a
        value is still nettune's to put back. Default: the kind's value has no parts."""
        return False

    def commands(self, loc: Loc, value: Any) -> list[str]:
        return []

    def read_back(self, ex: Host) -> dict[str, Any]:
        """What this kind's value decides beyond itself, read once all of a point's knobs
        are set and stored with the point's state (tuned and amd_pstate: the CPUs' governor
        and EPP). Default: nothing."""
        return {}

    def acts_on_interface(self, loc: Loc) -> bool:
        """Does the setting belong to loc.device, so that it is void (nothing to restore)
        once that interface is re-created?"""
        return loc.device is not None

    def forms(self, os: str, loc: Loc, value: Any) -> list[tuple[Loc, Any]]:
        """The settings this knob is on a host of this OS (`host.os`), each set, journaled
        and restored by its own kind: itself (the default); an OS-neutral kind (sockbuf)
        names the real sysctls of each OS (knobs/kinds/sockbuf.py)."""
        return [(loc, value)]

    def linux_sysctls(self, loc: Loc) -> list[str] | None:
        """The Linux sysctls (dotted names) this knob writes, for targets whose hosts see
        sysctls in several places (a Kubernetes node and its pods' namespaces): [] none,
        None when it cannot be told (a command knob may write anything). Default: none."""
        return []

    def slot_key(self, loc: Loc) -> str:
        """What tells two settings of this kind apart beyond kind, ARG and device."""
        return ""

    def show(self, value: Any) -> str:
        """A value (current, original or new) as one short line for messages and tables."""
        return str(value)

    def written(self, raw: Any) -> str:
        """A value as the study file writes it, after its key in the plan ('=9000'): true
        and false as TOML writes them."""
        return "=" + ("true" if raw is True else "false" if raw is False else str(raw))

    def persisted(self, loc: Loc, value: Any) -> "Persisted":
        """The value in the forms an admin installs (`nettune persist`); loc.device is set.
        Default: only the plain commands (apply.sh)."""
        return Persisted(shell=self.commands(loc, value))

    def catalog(self) -> list[dict[str, str]]:
        return []


@dataclass
class Persisted:
    """One knob's value in every persistent form it has (persist.py merges them per host)."""

    shell: list[str] = field(default_factory=list)  # apply.sh lines
    sysctl: list[tuple[str, str]] = field(default_factory=list)  # sysctl.d (and tuned [sysctl]) NAME, VALUE
    tuned_main: list[str] = field(default_factory=list)  # tuned [main] lines (include=PROFILE)
    tuned_net: dict[str, list[str]] = field(default_factory=dict)  # tuned [net] option -> words, for loc.device
    sysfs: list[tuple[str, str]] = field(default_factory=list)  # tuned [sysfs] PATH, VALUE
    udev: list[str] = field(default_factory=list)  # udev rule assignments for loc.device
    nm: list[str] = field(default_factory=list)  # nmcli connection settings for loc.device
    notes: list[str] = field(default_factory=list)  # what has no persistent form, and why

    @classmethod
    def script_only(cls, loc: Loc, shell: list[str]) -> "Persisted":
        """A setting no config file holds (IRQ affinity, a qdisc): only apply.sh's commands,
        and a note saying how to run them at boot."""
        return cls(shell=shell, notes=[f"{loc.key}: no sysctl.d/tuned/udev form; apply.sh has the command (run it at boot, e.g. from a systemd unit)"])


# -- helpers shared by kinds ---------------------------------------------------------

def run_ok(ex: Host, argv: list[str], what: str = "", timeout: float = 30.0) -> str:
    """Run argv on the executor; stdout, or KnobError with the tool's own message."""
    r = ex.run(argv, timeout=timeout)
    if r.returncode == 127 or "command not found" in r.stderr:
        raise KnobError(f"{argv[0]} is not installed on this host (needed for {what or argv[0]})")
    if r.returncode != 0:
        raise KnobError(f"{what + ': ' if what else ''}`{shlex.join(argv)}` failed: {r.said() or f'exit code {r.returncode}'}")
    return r.stdout


def read_file(ex: Host, path: str, what: str = "") -> str:
    try:
        return ex.read_text(path)
    except OSError as e:
        raise KnobError(f"{what or path}: cannot read {path}: {e.strerror or e}") from None


def write_file(ex: Host, path: str, text: str, what: str = "") -> None:
    try:
        ex.write_text(path, text)
    except OSError as e:
        raise KnobError(f"{what or path}: cannot write {text!r} to {path}: {e.strerror or e}") from None


def device_exists(ex: Host, dev: str) -> bool:
    if ex.os == "freebsd":  # no /sys there
        return bool(ex.run(["ifconfig", dev], timeout=10).returncode == 0)
    try:
        ex.read_text(f"/sys/class/net/{dev}/ifindex")
        return True
    except OSError:
        return False


def ifindex(ex: Host, dev: str) -> int | None:
    try:
        return int(ex.read_text(f"/sys/class/net/{dev}/ifindex").strip())
    except (OSError, ValueError):
        return None


def need_device(ex: Host, loc: Loc) -> str:
    if not loc.device:
        raise KnobError(f"{loc.key}: needs an interface; write '{loc.key}@IFACE' (e.g. '{loc.kind}@eth0')")
    if not device_exists(ex, loc.device):
        raise KnobError(f"{loc.key}: no interface {loc.device} on this host")
    return loc.device


def cpu_count(ex: Host) -> int:
    """Possible CPUs (highest index + 1) from /sys/devices/system/cpu/possible."""
    try:
        text = ex.read_text("/sys/devices/system/cpu/possible").strip()
    except OSError:
        import os

        return os.cpu_count() or 1
    return max(cpu_list(text)) + 1


def cpu_list(text: str) -> set[int]:
    """'0-3,8' -> {0,1,2,3,8}; raises ValueError."""
    out: set[int] = set()
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            if int(a) > int(b):
                raise ValueError(part)
            out |= set(range(int(a), int(b) + 1))
        else:
            out.add(int(part))
    return out


def cpu_list_text(cpus: set[int]) -> str:
    """{0,1,2,5} -> '0-2,5' (the kernel's own format)."""
    parts, run = [], []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
        else:
            if run:
                parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
            run = [c]
    if run:
        parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(parts)


def mixed_uniform(current: Any, a: Any, b: Any, scalar: type | tuple[type, ...]) -> bool:
    """For normalised per-part values (see same_uniform): every part of `current` equals
    that part of `a` or of `b` (a scalar stands for the same value in every part)."""
    if isinstance(current, scalar) or not current:
        return False

    def part(v: Any, k: Any) -> Any:
        return v if isinstance(v, scalar) else v.get(k)

    return all(x == part(a, k) or x == part(b, k) for k, x in current.items())


def same_uniform(a: Any, b: Any, scalar: type | tuple[type, ...]) -> bool:
    """Compare two normalised values of a per-queue (or per-IRQ) knob: each is a scalar
    (one value for all) or a dict of them. A scalar matches a dict when the dict is not
    empty and every entry equals it."""
    if isinstance(a, scalar) and isinstance(b, scalar):
        return bool(a == b)
    if isinstance(a, scalar):
        a, b = b, a
    if isinstance(b, scalar):
        return bool(a) and all(v == b for v in a.values())
    return bool(a == b)

def on_off(loc: Loc, raw: Any) -> str:
    if isinstance(raw, bool):
        return "on" if raw else "off"
    s = str(raw).strip().lower()
    if s in ("on", "1", "true", "yes"):
        return "on"
    if s in ("off", "0", "false", "no"):
        return "off"
    raise KnobError(f"{loc.key}: expected on or off, got {raw!r}")


def whole(loc: Loc, raw: Any, lo: int = 0, hi: int | None = None) -> int:
    if isinstance(raw, bool):
        raise KnobError(f"{loc.key}: expected a whole number, got {raw!r}")
    try:
        v = int(str(raw).strip()) if not isinstance(raw, float) or raw.is_integer() else None
    except ValueError:
        v = None
    if v is None:
        raise KnobError(f"{loc.key}: expected a whole number, got {raw!r}")
    if v < lo or (hi is not None and v > hi):
        raise KnobError(f"{loc.key}: {v} is out of range ({lo}..{hi if hi is not None else 'inf'})")
    return v
