"""cmdline:KEY = VALUE  (a kernel command-line parameter, set at boot; study C's mitigations=)

    [knobs]
    "cmdline:mitigations" = "{mitigations}"   # "off" / "auto"
    "cmdline:amd_pstate" = "active"
    "cmdline:nosmt" = true                     # a bare parameter; false removes it (absent)
    [knobs.hosts]
    "cmdline:mitigations" = ["vm1"]
    [target.hosts.vm1]
    allow_reboot = true                        # required: nettune reboots this host

apply:   the host's own way (bootloader.py: BLS entries and grubenv's kernelopts where
         grubby is, /etc/default/grub (+ its drop-ins) + update-grub or grub2-mkconfig,
         /etc/kernel/cmdline + proxmox-boot-tool refresh), then reboot, wait for SSH
         (targets/reboot.py, bounded by the host's reboot_timeout), and check
         /proc/cmdline: a value the kernel did not get fails the point with the reason.
         A /etc/default/grub.d drop-in, or grubenv's tuned_params, is another package's:
         edited only when the host says override_boot_dropins = true.
read:    {"family", "value": in the boot configuration, "booted": in /proc/cmdline,
         "files": {path: text}} where files are every file the family may edit (grub:
         /etc/default/grub and each /etc/default/grub.d/*.cfg; grubby: each BLS entry and
         /boot/grub2/grubenv; proxmox: /etc/kernel/cmdline); the journal keeps this before
         the edit, so the edited files come back byte for byte.
restore: each journaled file back (its original bytes when only nettune's edit is in it;
         else the key alone put back, keeping the other edits), the regenerate command,
         then a reboot if the booted value differs from the original one, and the check.
at_boot: configure/unconfigure are those edits without the reboot; when a point sets, or a
         restore puts back, several keys of a host, the knobs layer makes every edit first
         and reboots the host once for all of them (boot_batch.py), then checks each.
Kernel defaults: a value that is the kernel's own default for its parameter (KERNEL_DEFAULTS,
from Documentation/admin-guide/kernel-parameters.txt) means the same as the parameter
absent: parse, read and the reboot check all treat the two alike (canonical), so a host
whose command line has no mitigations= already runs with mitigations=auto: no edit, no
reboot. `false` is "absent" too, and the plan prints it so.
Refused (validate, before anything changes) on this machine and its namespaces (local,
lab), on a host without allow_reboot = true, and on a host with this machine's boot id.
Not run on real hardware here: tested on real-format files in temporary roots and on
lab hosts whose `reboot` is a documented fake (tests/test_reboot_lab.py).
"""
from __future__ import annotations

import shlex
from typing import Any

from ...targets.base import Host
from ...targets.reboot import RebootError, refuse_unless_rebootable
from ..base import REBOOT, Ctx, Disruption, Kind, KnobError, Loc, NotInForce, Persisted, catalog_row, read_file, run_ok
from ..boot_batch import reboot
from ..boot_bls import GRUBENV, grubenv_vars
from ..boot_trace import same_key
from ..bootloader import Edit, Family, Value, boot_file, check_value, detect, family_commands_all, parse_value, token, value_in

FAMILIES = ("grub", "grubby", "proxmox")  # bootloader.detect's families
SECURITY = ("cmdline:mitigations=off turns off the CPU's speculative-execution mitigations (Spectre, Meltdown, ...): "
            "the host is open to those attacks while it runs so; only on hosts that run nothing untrusted")


# The kernel's own value of a parameter when the command line does not give it, as
# Documentation/admin-guide/kernel-parameters.txt documents it: "mitigations= ... auto
# (default)" (kernel 5.2+, backported to 4.x stable; for kernels built with
# CPU_MITIGATIONS=y, every distribution kernel: "mitigations" is supported if and only if
# the kernel was built with CPU_MITIGATIONS=y). Only parameters with one documented default
# are here: amd_pstate's and intel_pstate's depend on the build and the CPU (no entry: a
# value for them is always written).
KERNEL_DEFAULTS = {"mitigations": "auto"}


def kernel_default(key: str) -> str | None:
    return next((v for k, v in KERNEL_DEFAULTS.items() if same_key(k, key)), None)


def canonical(key: str, value: Value) -> Value:
    """A value as nettune compares it: the kernel's default and absent are one (None)."""
    default = kernel_default(key)
    return None if default is not None and isinstance(value, str) and value == default else value


def default_note(key: str, value: Value) -> str | None:
    """What the plan says of a value that may already be in force (None: a value to set)."""
    if canonical(key, value) is not None:
        return None
    default = kernel_default(key)
    said = f"{key} absent, which is the kernel's default {key}={default}" if default else f"{key} absent"
    return f"unless the host's command line already has {said}: then no edit and no reboot"


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
        return canonical(loc.arg or "", value)  # "auto" for mitigations: the parameter absent

    def disruption(self, loc: Loc) -> Disruption:
        return Disruption(REBOOT, "unless the host already runs with the value", "reboot, wait for SSH, check /proc/cmdline")

    def check_reading(self, loc: Loc, value: Any) -> None:
        """A journaled reading {"family", "value", "booted", "files": {path: text}}: restore
        writes each text back to its path, so the paths must be boot files a family edits
        (bootloader.boot_file: never any other file) and the texts together must give the
        journaled value, as the family reads them."""
        if not isinstance(value, dict):
            self.parse(loc, value)
            return
        key, files = loc.arg or "", value.get("files") or {}
        fam = value.get("family")
        if set(value) - {"family", "value", "booted", "files"} or fam not in FAMILIES or not isinstance(files, dict):
            raise KnobError(f"{loc.key}: the journaled reading is not a boot configuration nettune reads")
        for facet in (value.get("value"), value.get("booted")):
            if facet is not None and facet is not True:
                check_value(key, str(facet))
        for path, text in files.items():
            if not boot_file(str(path)) or ".." in str(path).split("/"):
                raise KnobError(f"{loc.key}: the journaled reading names {path!r}, not a boot file of the {fam} family")
            if not isinstance(text, str) or len(text) > 1 << 20 or "\0" in text:
                raise KnobError(f"{loc.key}: the journaled text of {path} is not a boot file's text")
        try:
            held = Family(str(fam), [str(p) for p in files]).value({str(p): str(x) for p, x in files.items()}, key) if files else value.get("value")
        except KnobError as e:
            raise KnobError(f"{loc.key}: the journaled texts cannot be read as the {fam} family reads them ({e})") from None
        if canonical(key, held) != canonical(key, value.get("value")):
            raise KnobError(f"{loc.key}: the journaled texts do not hold the journaled value")

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        try:
            refuse_unless_rebootable(ex)
        except RebootError as e:
            raise KnobError(f"{loc.key} needs a reboot: {e}") from None
        fam = detect(ex)
        texts = {p: read_file(ex, p) for p in fam.files}
        fam.value(texts, loc.arg or "")  # files nettune cannot read as the boot loader does fail here
        edit = fam.edit(texts, loc.arg or "", value, ex.override_boot_dropins)  # and those it cannot edit safely
        ctx.notes += [f"{loc.key} on {ctx.host}: {n}" for n in edit.notes]
        warn = security_warning(loc.arg or "", value)
        if warn:
            ctx.notes.append(f"SECURITY: {warn} (host {ctx.host})")

    def read(self, ex: Host, loc: Loc) -> dict[str, Any]:
        key = loc.arg or ""
        fam = detect(ex)
        files = {p: read_file(ex, p) for p in fam.files}
        if fam.name == "grubby":  # grubby's own answer for the default entry (it expands $kernelopts too)
            configured = value_in(_grubby_default(ex), key)
        else:
            configured = fam.value(files, key)
        return {"family": fam.name, "value": canonical(key, configured), "booted": booted(ex, key), "files": files}

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        self.configure(ex, loc, value)
        self._boot_into(ex, loc, value)

    def restore(self, ex: Host, loc: Loc, original: Any) -> None:
        self.unconfigure(ex, loc, original)
        self._boot_into(ex, loc, original)

    def configure(self, ex: Host, loc: Loc, value: Any) -> None:
        """The edit and the regenerate command; the value is in force after the next boot."""
        fam = detect(ex)
        texts = {p: read_file(ex, p) for p in fam.files}
        self._write(ex, loc, fam, fam.edit(texts, loc.arg or "", value, ex.override_boot_dropins))
        self._regen(ex, loc, fam)

    def unconfigure(self, ex: Host, loc: Loc, original: Any) -> None:
        """The journaled files back (see the module doc) and the regenerate command."""
        key = loc.arg or ""
        if not isinstance(original, dict):
            self.configure(ex, loc, original)
            return
        orig_value, _ = _facets(original)
        fam = detect(ex)
        before: dict[str, str] = dict(original.get("files") or {})
        if before:  # the key as those files wrote it (an explicit default stays explicit)
            try:
                orig_value = fam.value(before, key)
            except KnobError:
                pass
        odd = [p for p in before if not boot_file(p)]
        if odd:  # a journal is read back from disk: it names only the files a family edits
            raise KnobError(f"{loc.key}: the journaled reading names {odd[0]!r}, not a boot configuration file nettune edits; not written")
        now: dict[str, str] = {}
        for path in before:
            try:
                now[path] = ex.read_text(path)
            except OSError:
                continue  # an entry removed since (its kernel uninstalled): nothing to put back
        added = [p for p in fam.files if p not in now and fam.name == "grubby" and p.endswith(".conf")]
        for path in added:  # a BLS entry added since (a kernel update) gets the original too; a drop-in is never nettune's
            now[path] = read_file(ex, path)
        changed = [p for p in before if p in now and now[p] != before[p]]
        ours = fam.edit(before, key, fam.value(now, key), True)  # what nettune's edit alone made of the originals
        theirs: list[str] = []
        for path in changed:
            if _only_ours(path, before[path], now[path], ours):
                replace_file(ex, path, before[path])  # only nettune's edit in it: the original bytes
            else:
                theirs.append(path)
        if theirs or added:  # someone else's edits too: the key alone put back there
            fresh = {p: t for p, t in now.items() if p not in changed or p in theirs}
            fresh |= {p: before[p] for p in changed if p not in theirs}
            back = fam.edit(fresh, key, orig_value, True)
            self._write(ex, loc, fam, Edit(files={p: t for p, t in back.files.items() if p in theirs or p not in before}, env=back.env))
        self._regen(ex, loc, fam)

    def _write(self, ex: Host, loc: Loc, fam: Family, edit: Edit) -> None:
        for path, text in edit.files.items():
            replace_file(ex, path, text)
        for name, value in edit.env.items():  # grubenv: with the distribution's tool, as grubby does
            run_ok(ex, [fam.editenv, GRUBENV, "set", f"{name}={value}"], f"{loc.key}: {fam.editenv}", timeout=60)

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

    def written(self, raw: Any) -> str:
        """false is the parameter absent from the command line; true a bare flag."""
        return " absent" if raw is False else " (bare flag)" if raw is True else f"={raw}"

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
        every host: only a note with each family's way by hand (the host's decides)."""
        key = loc.arg or ""
        tok = key if value is None else token(key, value)
        change = f"--remove-args={key}" if value is None else f"--args={tok}"
        ways = [f"Fedora/RHEL: grubby --update-kernel=ALL {change}",
                f"Debian/Ubuntu: {'remove' if value is None else 'set'} {tok} in GRUB_CMDLINE_LINUX_DEFAULT of /etc/default/grub, then update-grub",
                f"Proxmox with systemd-boot: {'remove' if value is None else 'set'} {tok} on line 1 of /etc/kernel/cmdline, then proxmox-boot-tool refresh"]
        return Persisted(notes=[f"{loc.key}: a kernel boot option; set it the host's way, then reboot: " + " | ".join(ways)])

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "cmdline", '"cmdline:KEY" = "VALUE" | true | false', "machine (boot)",
            "kernel command-line parameter (mitigations=off, amd_pstate=active, ...): BLS entries and grubenv (grubby hosts), "
            "/etc/default/grub + update-grub, or /etc/kernel/cmdline + proxmox-boot-tool, then a reboot; only hosts with allow_reboot = true",
            "distribution's", "-", "reboot (nettune reboots the host and checks /proc/cmdline)",
            "a wrong value can leave a host unbootable; mitigations=off weakens its security", "loader.conf",
        )]


def booted(ex: Host, key: str) -> Value:
    return canonical(key, value_in(read_file(ex, "/proc/cmdline"), key))


def _grubby_default(ex: Host) -> str:
    from ..bootloader import grubby_default_args

    return grubby_default_args(run_ok(ex, ["grubby", "--info=DEFAULT"], "grubby --info=DEFAULT"))


def _shown(key: str, value: Value) -> str:
    if value is None:
        return f"no {key}".strip() if key else "absent"
    if value is True:
        return key or "set"
    return f"{key}={value}" if key else str(value)


def _only_ours(path: str, before: str, now: str, ours: Edit) -> bool:
    """Is the file as nettune's edit left it (so its original bytes go back)? grubenv
    compares by its variables (grub2-editenv rewrites the block); a file edited by an
    older nettune through grubby differs from the edit only in how grubby spaced it."""
    if path == GRUBENV:
        return grubenv_vars(now) == grubenv_vars(before) | ours.env
    made = ours.files.get(path, before)
    return made == now or " ".join(made.split()) == " ".join(now.split())


def replace_file(ex: Host, path: str, text: str) -> None:
    """Write a boot file whole: a temporary file next to it (same mode and owner), then
    rename, so a kill -9 or a dropped connection never leaves it half written. A symlink
    (RHEL's /boot/grub2/grubenv -> ../efi/EFI/redhat/grubenv) stays one: its target is written."""
    r = ex.run(["readlink", "-f", "--", path], timeout=15)
    real = r.stdout.strip() if r.returncode == 0 and r.stdout.strip().startswith("/") else path
    tmp = f"{real}.nettune-tmp"
    try:
        ex.write_text(tmp, text)
    except OSError as e:
        raise KnobError(f"cannot write {tmp}: {e}") from None
    run_ok(ex, ["sh", "-c", 'chmod --reference="$1" "$2" 2>/dev/null; chown --reference="$1" "$2" 2>/dev/null; mv -f "$2" "$1"',
                "sh", real, tmp], f"replace {path}")
