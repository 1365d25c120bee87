"""cmdline:KEY = VALUE  (a kernel command-line parameter, set at boot; study C's mitigations=)

    [knobs]
    "cmdline:mitigations" = "{mitigations}"   # "off" / "auto"
    "cmdline:amd_pstate" = "active"
    "cmdline:nosmt" = true                     # a bare parameter; false removes it
    [knobs.hosts]
    "cmdline:mitigations" = ["vm1"]
    [target.hosts.vm1]
    allow_reboot = true                        # required: nettune reboots this host

apply:   the host's own way (bootloader.py: grubby, /etc/default/grub + update-grub or
         grub2-mkconfig, /etc/kernel/cmdline + proxmox-boot-tool refresh), then reboot,
         wait for SSH (targets/reboot.py, bounded by the host's reboot_timeout), and check
         /proc/cmdline: a value the kernel did not get fails the point with the reason.
read:    {"family", "value": in the boot configuration, "booted": in /proc/cmdline,
         "files": {path: text}}; the journal keeps this before the edit, so the edited
         files come back byte for byte.
restore: each journaled file back (its original bytes when only nettune's edit is in it;
         else the key alone put back, keeping the other edits), the regenerate command,
         then a reboot if the booted value differs from the original one, and the check.
at_boot: configure/unconfigure are those edits without the reboot; when a point sets, or a
         restore puts back, several keys of a host, the knobs layer makes every edit first
         and reboots the host once for all of them (boot_batch.py), then checks each.
Refused (validate, before anything changes) on this machine and its namespaces (local,
lab), on a host without allow_reboot = true, and on a host with this machine's boot id.
Not run on real hardware here: tested on real-format files in temporary roots and on
lab hosts whose `reboot` is a documented fake (tests/test_reboot_lab.py).
"""
from __future__ import annotations

import re
import shlex
from typing import Any

from ...targets.base import Host
from ...targets.reboot import RebootError, refuse_unless_rebootable
from ..base import Ctx, Kind, KnobError, Loc, NotInForce, Persisted, catalog_row, read_file, run_ok
from ..boot_batch import reboot
from ..bootloader import BLS_DIR, GRUB_DEFAULT, KERNEL_CMDLINE, Family, Value, check_value, detect, family_commands_all, parse_value, value_in

SECURITY = ("cmdline:mitigations=off turns off the CPU's speculative-execution mitigations (Spectre, Meltdown, ...): "
            "the host is open to those attacks while it runs so; only on hosts that run nothing untrusted")


# the files each family journals (bootloader.detect): a restore writes back only these
BOOT_FILES = {"grub": re.compile(re.escape(GRUB_DEFAULT)), "proxmox": re.compile(re.escape(KERNEL_CMDLINE)),
              "grubby": re.compile(re.escape(BLS_DIR) + r"/[A-Za-z0-9_][A-Za-z0-9_.+-]{0,200}\.conf")}


def security_warning(key: str, value: Any) -> str | None:
    return SECURITY if key == "mitigations" and str(value).strip().lower() == "off" else None


def _facets(v: Any) -> tuple[Value, Value]:
    """(configured, booted) of a reading; a study value stands for both."""
    if isinstance(v, dict):
        return v.get("value"), v.get("booted")
    return v, v


class Cmdline(Kind):
    name = "cmdline"
    takes_arg, example_arg = "required", "mitigations"
    host_wide = True  # the whole machine's kernel
    must_read_back = True
    at_boot = True

    def parse(self, loc: Loc, raw: Any) -> Value:
        value = parse_value(raw)
        check_value(loc.arg or "", value)
        return value

    def check_reading(self, loc: Loc, value: Any) -> None:
        """A journaled reading {"family", "value", "booted", "files": {path: text}}: restore
        writes each text back to its path, so the paths must be the boot files of that
        family (never any other file) and each text must hold the journaled value."""
        if not isinstance(value, dict):
            self.parse(loc, value)
            return
        key, files = loc.arg or "", value.get("files") or {}
        fam = value.get("family")
        if set(value) - {"family", "value", "booted", "files"} or fam not in BOOT_FILES or not isinstance(files, dict):
            raise KnobError(f"{loc.key}: the journaled reading is not a boot configuration nettune reads")
        for facet in (value.get("value"), value.get("booted")):
            if facet is not None and facet is not True:
                check_value(key, str(facet))
        for path, text in files.items():
            if not BOOT_FILES[fam].fullmatch(str(path)) or ".." in str(path):
                raise KnobError(f"{loc.key}: the journaled reading names {path!r}, not a boot file of the {fam} family")
            if not isinstance(text, str) or len(text) > 1 << 20 or "\0" in text:
                raise KnobError(f"{loc.key}: the journaled text of {path} is not a boot file's text")
            if fam != "grubby" and Family(str(fam), [str(path)]).value(str(path), text, key) != value.get("value"):
                raise KnobError(f"{loc.key}: the journaled text of {path} does not hold the journaled value")

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        try:
            refuse_unless_rebootable(ex)
        except RebootError as e:
            raise KnobError(f"{loc.key} needs a reboot: {e}") from None
        fam = detect(ex)
        for path in fam.files:
            fam.value(path, read_file(ex, path), loc.arg or "")  # a file nettune cannot edit safely fails here
        if fam.name == "grub":
            r = ex.run(["sh", "-c", 'grep -l GRUB_CMDLINE_LINUX "$1"/*.cfg 2>/dev/null; true', "sh", "/etc/default/grub.d"], timeout=15)
            if r.stdout.strip():
                ctx.notes.append(f"{loc.key} on {ctx.host}: {', '.join(r.stdout.split())} also set(s) GRUB_CMDLINE_LINUX*; "
                                 f"nettune edits {GRUB_DEFAULT}, and /proc/cmdline is checked after the reboot")
        warn = security_warning(loc.arg or "", value)
        if warn:
            ctx.notes.append(f"SECURITY: {warn} (host {ctx.host})")

    def read(self, ex: Host, loc: Loc) -> dict[str, Any]:
        key = loc.arg or ""
        fam = detect(ex)
        files = {p: read_file(ex, p) for p in fam.files}
        if fam.name == "grubby":  # grubby's own answer for the default entry
            configured = value_in(_grubby_default(ex), key)
        else:
            configured = fam.value(fam.files[0], files[fam.files[0]], key)
        return {"family": fam.name, "value": configured, "booted": booted(ex, key), "files": files}

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        self.configure(ex, loc, value)
        self._boot_into(ex, loc, value)

    def restore(self, ex: Host, loc: Loc, original: Any) -> None:
        self.unconfigure(ex, loc, original)
        self._boot_into(ex, loc, original)

    def configure(self, ex: Host, loc: Loc, value: Any) -> None:
        """The edit and the regenerate command; the value is in force after the next boot."""
        key = loc.arg or ""
        fam = detect(ex)
        if fam.name == "grubby":
            run_ok(ex, fam.grubby_argv(key, value), f"{loc.key}: grubby", timeout=120)
        else:
            for path in fam.files:
                text = read_file(ex, path)
                replace_file(ex, path, fam.edit(path, text, key, value))
        self._regen(ex, loc, fam)

    def unconfigure(self, ex: Host, loc: Loc, original: Any) -> None:
        """The journaled files back (see the module doc) and the regenerate command."""
        key = loc.arg or ""
        if not isinstance(original, dict):
            self.configure(ex, loc, original)
            return
        orig_value, _ = _facets(original)
        fam = detect(ex)
        if fam.name == "grubby":  # entries added since (a kernel update) get the original too
            run_ok(ex, fam.grubby_argv(key, orig_value), f"{loc.key}: grubby", timeout=120)
        for path, before in (original.get("files") or {}).items():
            try:
                now = ex.read_text(path)
            except OSError:
                continue  # an entry removed since (its kernel uninstalled): nothing to put back
            fam_now = fam.value(path, now, key)
            if now == before:
                continue
            if fam.edit(path, before, key, fam_now) == now or _same_tokens(fam, path, now, before, key):
                replace_file(ex, path, before)  # only nettune's edit in it: the original bytes
            else:
                replace_file(ex, path, fam.edit(path, now, key, orig_value))  # keep someone else's edits
        self._regen(ex, loc, fam)

    def needs_boot(self, ex: Host, loc: Loc, value: Any) -> bool:
        return booted(ex, loc.arg or "") != _facets(value)[1]

    def check_booted(self, ex: Host, loc: Loc, value: Any) -> None:
        key, want = loc.arg or "", _facets(value)[1]
        now = booted(ex, key)
        if now != want:
            raise NotInForce(f"{loc.key}: after the reboot /proc/cmdline has {_shown(key, now)}, not {_shown(key, want)}: the boot "
                             "loader did not pass the edit (another config file overrides it, or the host booted another entry)")

    def _regen(self, ex: Host, loc: Loc, fam: Family) -> None:
        for argv in fam.regen:
            run_ok(ex, argv, f"{loc.key}: {argv[0]}", timeout=600)

    def _boot_into(self, ex: Host, loc: Loc, value: Any) -> None:
        """One change alone: reboot if the kernel runs without it, then check."""
        if not self.needs_boot(ex, loc, value):
            return  # already running with it: no reboot needed
        try:
            reboot(ex)
        except KnobError as e:
            raise KnobError(f"{loc.key}: {e}") from None
        self.check_booted(ex, loc, value)

    def same(self, a: Any, b: Any) -> bool:
        return _facets(a) == _facets(b)

    def looks_like(self, current: Any, new: Any) -> bool:
        """The configuration holds nettune's value (the reboot may not have happened yet)."""
        return _facets(current)[0] == _facets(new)[0]

    def between(self, current: Any, original: Any, new: Any) -> bool:
        """The configuration of one and the booted value of the other: a restore (or
        apply) stopped between its edit and its reboot (kill -9, a reboot that failed)."""
        conf, boot = _facets(current)
        (o_conf, o_boot), (n_conf, n_boot) = _facets(original), _facets(new)
        return conf in (o_conf, n_conf) and boot in (o_boot, n_boot)

    def show(self, value: Any) -> str:
        conf, boot = _facets(value)
        return _shown("", conf) if conf == boot else f"{_shown('', conf)} (booted: {_shown('', boot)})"

    def commands(self, loc: Loc, value: Any) -> list[str]:
        key = loc.arg or ""
        if isinstance(value, dict):  # a journaled reading: the files' exact bytes back
            out = [f"printf %s {shlex.quote(text)} > {shlex.quote(path)}" for path, text in (value.get("files") or {}).items()]
            fam = {"proxmox": [["proxmox-boot-tool", "refresh"]], "grub": [["update-grub"]]}.get(str(value.get("family")), [])
            return out + [shlex.join(c) for c in fam] + ["reboot"]
        return family_commands_all(key, value) + ["reboot"]

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        """A boot option has no sysctl.d/tuned/udev form and no one-line command that fits
        every host: only a note with each family's way (the host's decides)."""
        return Persisted(notes=[f"{loc.key}: a kernel boot option; set it the host's way, then reboot: "
                                + " | ".join(family_commands_all(loc.arg or "", value))])

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "cmdline", '"cmdline:KEY" = "VALUE" | true | false', "machine (boot)",
            "kernel command-line parameter (mitigations=off, amd_pstate=active, ...): grubby, /etc/default/grub + update-grub, "
            "or /etc/kernel/cmdline + proxmox-boot-tool, then a reboot; only hosts with allow_reboot = true",
            "distribution's", "-", "reboot (nettune reboots the host and checks /proc/cmdline)",
            "a wrong value can leave a host unbootable; mitigations=off weakens its security", "loader.conf",
        )]


def booted(ex: Host, key: str) -> Value:
    return value_in(read_file(ex, "/proc/cmdline"), key)


def _grubby_default(ex: Host) -> str:
    from ..bootloader import grubby_default_args

    return grubby_default_args(run_ok(ex, ["grubby", "--info=DEFAULT"], "grubby --info=DEFAULT"))


def _shown(key: str, value: Value) -> str:
    if value is None:
        return f"no {key}".strip() if key else "absent"
    if value is True:
        return key or "set"
    return f"{key}={value}" if key else str(value)


def _same_tokens(fam: Family, path: str, a: str, b: str, key: str) -> bool:
    """Do two versions of a file differ only in `key` and in how grubby spaced the args?"""
    return " ".join(fam.edit(path, a, key, None).split()) == " ".join(fam.edit(path, b, key, None).split())


def replace_file(ex: Host, path: str, text: str) -> None:
    """Write a boot file whole: a temporary file next to it (same mode and owner), then
    rename, so a kill -9 or a dropped connection never leaves it half written."""
    tmp = f"{path}.nettune-tmp"
    try:
        ex.write_text(tmp, text)
    except OSError as e:
        raise KnobError(f"cannot write {tmp}: {e}") from None
    run_ok(ex, ["sh", "-c", 'chmod --reference="$1" "$2" 2>/dev/null; chown --reference="$1" "$2" 2>/dev/null; mv -f "$2" "$1"',
                "sh", path, tmp], f"replace {path}")
