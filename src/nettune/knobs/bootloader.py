"""Where a Linux host keeps its kernel command line, and the edits nettune makes there.

Three families, found on the host (files present, tools installed, /etc/os-release):
    proxmox  /etc/kernel/cmdline + `proxmox-boot-tool refresh`
             (Proxmox VE booting with systemd-boot: EFI with ZFS root; admin guide "Host Bootloader")
    grubby   BLS entries in /boot/loader/entries/*.conf and grubenv (Fedora, RHEL 8+, where
             grubby is installed): each entry's `options` lines, `$kernelopts` in grubenv
    grub     /etc/default/grub and /etc/default/grub.d/*.cfg GRUB_CMDLINE_LINUX(_DEFAULT) +
             update-grub (Debian, Ubuntu, Proxmox with GRUB) or grub2-mkconfig -o
             /boot/grub2/grub.cfg (Fedora family without grubby)

Each family reads its files as its boot loader does (boot_grub.py, boot_bls.py) into a
command line whose characters know where they are written (boot_trace.py); an edit
changes the parameter there, or adds it where the loader will read it, and is read back
before anything is written. A value of a command-line key is a string (`mitigations=off`),
True (a bare `quiet`) or None (absent); keys compare with `-` and `_` alike, as the kernel's.
nettune writes BLS entries itself rather than run grubby: grubby copies the joined
options to every `options` line of an entry that has several.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..targets.base import Host
from .base import KnobError
from .boot_bls import BLS_DIR, GRUBENV, KERNEL_CMDLINE, OWNED, bls_traced, grubenv_vars, kernel_cmdline_traced, new_options_line, proxmox_check
from .boot_grub import DROPINS, GRUB_DEFAULT, VARS, UNKNOWN, cmdline, evaluate
from .boot_trace import Change, Origin, Traced, apply, check, occurrences, plan, same_key

KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
# no quotes, spaces, $ or backslash: a value lands in a file a shell sources (/etc/default/grub)
VALUE = re.compile(r"^[A-Za-z0-9_.,:/+=@%-]{1,200}$")
Value = str | bool | None  # "off" | True (bare KEY) | None (absent)
RHEL_LIKE = {"fedora", "rhel", "centos", "rocky", "almalinux", "ol", "amzn"}
# kernel parameters that weaken or harden the machine: another package's value of one
# of these (a hardening drop-in's mitigations=auto,nosmt) is named louder when overridden
SECURITY_KEYS = {"mitigations", "nosmt", "spectre_v2", "spectre_v2_user", "spec_store_bypass_disable", "l1tf", "mds", "tsx",
                 "tsx_async_abort", "mmio_stale_data", "retbleed", "srbds", "gather_data_sampling", "reg_file_data_sampling",
                 "spectre_bhi", "pti", "nopti", "nospectre_v1", "nospectre_v2", "kpti", "lockdown", "module.sig_enforce",
                 "init_on_alloc", "init_on_free", "slab_nomerge", "page_alloc.shuffle", "randomize_kstack_offset", "vsyscall",
                 "debugfs", "nokaslr", "selinux", "apparmor", "security", "lsm", "audit", "iommu", "intel_iommu", "amd_iommu"}
OPT_IN = "override_boot_dropins = true"
# every file a family journals and a restore may write back (the keys of a cmdline change's
# journaled `files`): anything else in a journal record is not nettune's to write
BOOT_FILES = re.compile(r"^(?:/etc/default/grub|/etc/default/grub\.d/[^/]+\.cfg|/boot/loader/entries/[^/]+\.conf|/boot/grub2/grubenv|/etc/kernel/cmdline)$")

__all__ = ["BLS_DIR", "BOOT_FILES", "GRUBENV", "GRUB_DEFAULT", "KERNEL_CMDLINE", "Edit", "Family", "Value", "boot_file", "check_value", "detect", "family_commands_all",
           "grub_set", "grub_value", "parse_value", "same_key", "token", "value_in"]


def boot_file(path: str) -> bool:
    """Is `path` one of the files a family edits (so a journaled text for it may be written back)?"""
    return bool(BOOT_FILES.match(path))


def token(key: str, value: Value) -> str:
    return key if value is True else f"{key}={value}"


def value_in(args: str, key: str) -> Value:
    """The value of `key` in a command line (the last occurrence wins, as in the kernel);
    words after a lone `--` go to init and are not kernel parameters."""
    return _value(Traced.made(args), key)


def _value(t: Traced, key: str) -> Value:
    found = occurrences(t, key)
    if not found:
        return None
    a, b = found[-1]
    word = "".join(c.ch for c in t.chars[a:b])
    name, eq, val = word.partition("=")
    return val if eq else True


def check_value(key: str, value: Value) -> None:
    if not KEY.match(key):
        raise KnobError(f"cmdline:{key}: a kernel parameter name is letters, digits, '_', '-' and '.' (e.g. cmdline:mitigations)")
    if isinstance(value, str) and not VALUE.match(value):
        raise KnobError(f"cmdline:{key}: {value!r} is not a safe kernel parameter value (letters, digits and _.,:/+=@%- only; "
                        "no spaces, quotes or $)")


@dataclass
class Edit:
    """What an edit changes: files written whole, grubenv variables set with the
    distribution's tool, and what the user should know (files overridden, edited)."""

    files: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class Family:
    name: str  # "proxmox" | "grubby" | "grub"
    files: list[str]  # what nettune journals and puts back byte for byte
    regen: list[list[str]] = field(default_factory=list)  # run after the files changed
    os_id: str = ""
    editenv: str = ""  # grub2-editenv / grub-editenv: grubenv is changed with it only

    def value(self, texts: dict[str, str], key: str) -> Value:
        """The value the kernel gets from these files at the next boot (the default entry's, for BLS)."""
        if self.name == "grub":
            return _value(_grub_line(texts), key)
        if self.name == "proxmox":
            proxmox_check(KERNEL_CMDLINE, texts.get(KERNEL_CMDLINE, ""))
            return _value(kernel_cmdline_traced(KERNEL_CMDLINE, texts.get(KERNEL_CMDLINE, "")), key)
        entries = [p for p in self.files if p in texts and p != GRUBENV]
        if not entries:
            return None
        env = grubenv_vars(texts.get(GRUBENV, ""))
        default = next((p for p in entries if p.rsplit("/", 1)[-1].removesuffix(".conf") == env.get("saved_entry")), entries[0])
        return _value(bls_traced(default, texts[default], env)[0], key)

    def edit(self, texts: dict[str, str], key: str, value: Value, dropins_ok: bool = False) -> Edit:
        """The files (and grubenv variables) that give `key` this value, read back and
        checked; KnobError (naming the file and why) when that cannot be done safely."""
        tok = None if value is None else token(key, value)
        if self.name == "grub":
            return _grub_edit(texts, key, tok, dropins_ok)
        if self.name == "proxmox":
            text = texts[KERNEL_CMDLINE]
            proxmox_check(KERNEL_CMDLINE, text)
            t = kernel_cmdline_traced(KERNEL_CMDLINE, text)
            anchor = next((c.origin for c in t.chars if c.ch == ""), None)
            new = apply(text, plan(t, key, tok, anchor, KERNEL_CMDLINE))
            check(t, kernel_cmdline_traced(KERNEL_CMDLINE, new), key, tok, KERNEL_CMDLINE)
            return Edit(files={KERNEL_CMDLINE: new} if new != text else {})
        return _bls_edit(self, texts, key, tok, dropins_ok)

    def commands(self, key: str, value: Value) -> list[str]:
        """What nettune changes to set key=value here, as lines (dry run, docs)."""
        change = f"remove {key}" if value is None else f"set {token(key, value)}"
        if self.name == "grubby":
            return [f"edit {BLS_DIR}/*.conf: {change} in each entry's options (the last options line, or grubenv's kernelopts "
                    f"with grub2-editenv where the entry reads $kernelopts)"]
        where = ("where GRUB_CMDLINE_LINUX* has it, else GRUB_CMDLINE_LINUX_DEFAULT; a /etc/default/grub.d drop-in that sets it "
                 f"is named first and edited only with {OPT_IN}") if self.name == "grub" else "its line"
        return [f"edit {self.files[0]}: {change} {where}"] + [shlex.join(c) for c in self.regen]


def _grub_files(texts: dict[str, str]) -> list[tuple[str, str]]:
    """In grub-mkconfig's order: /etc/default/grub, then the drop-ins as the glob lists them."""
    return [(p, texts[p]) for p in [GRUB_DEFAULT] + sorted(p for p in texts if p.startswith(DROPINS + "/")) if p in texts]


def _grub_line(texts: dict[str, str]) -> Traced:
    env, done = evaluate(_grub_files(texts))
    bad = next((a for a in done if a.var in VARS and a.unknown and any(c.ch == UNKNOWN for c in env[a.var].chars)), None)
    if bad is not None:
        raise KnobError(f"{bad.path} line {bad.line}: {bad.var} uses {bad.unknown}; nettune cannot tell the kernel command line "
                        "grub-mkconfig makes from it (edit it by hand)")
    return cmdline(env)


def _grub_edit(texts: dict[str, str], key: str, tok: str | None, dropins_ok: bool) -> Edit:
    where = f"cmdline:{key} in {GRUB_DEFAULT}"
    line = _grub_line(texts)
    _, done = evaluate(_grub_files(texts))
    reaching = {c.origin for c in line.chars if c.ch == ""}  # assignments whose text the linux line gets

    def last(ok: Any) -> Origin | None:
        return next((o for a in reversed(done) if a.var in VARS and ok(a) and (o := a.value.chars[-1].origin) in reaching), None)

    # a new word goes after /etc/default/grub's own GRUB_CMDLINE_LINUX_DEFAULT (else its
    # GRUB_CMDLINE_LINUX) that reaches the line; into a drop-in only with the opt-in
    anchor = (last(lambda a: a.var == VARS[1] and a.path == GRUB_DEFAULT) or last(lambda a: a.var == VARS[0] and a.path == GRUB_DEFAULT)
              or (last(lambda a: True) if dropins_ok else None))
    found = occurrences(line, key)
    others = [(line.chars[a].origin.source, _word_at(line, a, b)) for a, b in found
              if line.chars[a].origin is not None and line.chars[a].origin.source != GRUB_DEFAULT]
    if tok is not None and not found and anchor is None:
        text = texts.get(GRUB_DEFAULT, "")
        changes = [Change(GRUB_DEFAULT, len(text), len(text), ("" if text.endswith("\n") or not text else "\n") + f'{VARS[1]}="{tok}"\n')]
    else:
        changes = plan(line, key, tok, anchor, where)
    touched = sorted({c.source for c in changes} - {GRUB_DEFAULT})
    if touched and not dropins_ok:
        said = "; ".join(f"{src} sets {w}" for src, w in others) or f"{touched[0]} sets GRUB_CMDLINE_LINUX* after {GRUB_DEFAULT}"
        security = " (a security setting another package made)" if any(same_key(key, k) for k in SECURITY_KEYS) else ""
        raise KnobError(f"{said}{security}: {tok or 'removing ' + key} would change {', '.join(touched)}, which nettune leaves alone "
                        f"unless the study says so: add {OPT_IN} to the host (the file is journaled and put back byte for byte)")
    new = dict(texts)
    for src in {c.source for c in changes}:
        new[src] = apply(texts.get(src, ""), [c for c in changes if c.source == src])
    try:
        check(line, _grub_line(new), key, tok, where)
    except KnobError:
        resets = [a for a in done if a.var in VARS and a.path != GRUB_DEFAULT]
        if resets and not touched:
            r = resets[-1]
            raise KnobError(f"{r.path} line {r.line} sets {r.var} again after {GRUB_DEFAULT} without keeping its value: an edit of "
                            f"{GRUB_DEFAULT} would not reach the kernel; add {OPT_IN} to the host to let nettune edit {r.path}") from None
        raise
    notes = [f"{src} also sets {w}: the kernel takes the last occurrence, {GRUB_DEFAULT}'s, so that value is overridden while the study runs"
             for src, w in others if src not in touched]
    skipped = [a for a in done if a.var == VARS[1] and a.path != GRUB_DEFAULT and not any(c.origin is not None and c.origin.source == GRUB_DEFAULT
                                                                                          for c in a.value.chars)]
    if tok is not None and not found and skipped and anchor is not None and anchor.source == GRUB_DEFAULT:
        notes.append(f"{skipped[-1].path} line {skipped[-1].line} sets {VARS[1]} again (what {GRUB_DEFAULT} gives it never reaches the "
                     f"kernel): {tok} goes into {GRUB_DEFAULT}'s {VARS[0]}")
    notes += [f"{p} is edited ({OPT_IN}): {tok or 'no ' + key} there while the study runs, the file put back after" for p in touched]
    return Edit(files={p: t for p, t in new.items() if t != texts.get(p)}, notes=notes)


def _word_at(t: Traced, a: int, b: int) -> str:
    return "".join(c.ch for c in t.chars[a:b])


def _bls_edit(fam: Family, texts: dict[str, str], key: str, tok: str | None, dropins_ok: bool) -> Edit:
    env = grubenv_vars(texts.get(GRUBENV, ""))
    out = Edit()
    for path in (p for p in fam.files if p in texts and p != GRUBENV):
        text = texts[path]
        t, anchor = bls_traced(path, text, env)
        where = f"cmdline:{key} in {path}"
        if anchor is None and tok is not None and not occurrences(t, key):
            out.files[path] = new_options_line(text, tok)  # an entry with no options line gets one
            continue
        changes = plan(t, key, tok, anchor, where)
        for c in changes:
            if c.source.startswith("grubenv:"):
                name = c.source.split(":", 1)[1]
                if name not in OWNED and not dropins_ok:
                    raise KnobError(f"{path}: {key} comes from grubenv's ${name} ({_word_at(t, *occurrences(t, key)[-1])}), another "
                                    f"tool's setting (tuned's bootloader plugin for tuned_params); add {OPT_IN} to the host to let "
                                    "nettune change it (grubenv is journaled and put back byte for byte)")
                out.env[name] = apply(env.get(name, ""), [c])
        mine = [c for c in changes if c.source == path]
        if mine:
            out.files[path] = apply(text, mine)
    env2 = {**env, **out.env}
    for path in (p for p in fam.files if p in texts and p != GRUBENV):
        check(bls_traced(path, texts[path], env)[0], bls_traced(path, out.files.get(path, texts[path]), env2)[0], key, tok, path)
    if out.env:
        if not fam.editenv:
            raise KnobError(f"the entries take {key} from grubenv ({', '.join(out.env)}) but neither grub2-editenv nor grub-editenv is installed")
        if GRUBENV not in texts:
            raise KnobError(f"the entries read ${', $'.join(out.env)} from grubenv but {GRUBENV} is not there")
    return out


def grub_value(text: str, key: str) -> Value:
    """The value normal entries get from one /etc/default/grub (no drop-ins)."""
    return Family("grub", [GRUB_DEFAULT]).value({GRUB_DEFAULT: text}, key)


def grub_set(text: str, key: str, value: Value) -> str:
    """One /etc/default/grub with `key` set (None: removed), edited where it is written."""
    return Family("grub", [GRUB_DEFAULT]).edit({GRUB_DEFAULT: text}, key, value).files.get(GRUB_DEFAULT, text)


def grubby_default_args(info: str) -> str:
    """The args="..." of `grubby --info=DEFAULT` (grubby prints root= on a line of its own)."""
    args, root = "", ""
    for line in info.splitlines():
        if line.startswith("args="):
            args = line[5:].strip().strip('"')
        elif line.startswith("root="):
            root = line[5:].strip().strip('"')
    return (f"root={root} " if root else "") + args


# -- finding the family on a host --------------------------------------------------------

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


def listed(ex: Host, folder: str, suffix: str) -> list[str]:
    """The regular files `folder/*suffix`, sorted as the shell's glob lists them."""
    r = ex.run(["sh", "-c", 'for f in "$1"/*"$2"; do [ -f "$f" ] && printf "%s\\n" "$f"; done; true', "sh", folder, suffix], timeout=15)
    return sorted(ln for ln in r.stdout.splitlines() if ln.endswith(suffix))


def detect(ex: Host) -> Family:
    """How this host's kernel command line is set, or KnobError saying what was looked for."""
    os_id = os_release_id(ex)
    if _exists(ex, KERNEL_CMDLINE) and ex.which("proxmox-boot-tool"):
        return Family("proxmox", [KERNEL_CMDLINE], [["proxmox-boot-tool", "refresh"]], os_id)
    if ex.which("grubby"):
        entries = listed(ex, BLS_DIR, ".conf")
        if entries:
            editenv = next((t for t in ("grub2-editenv", "grub-editenv") if ex.which(t)), "")
            return Family("grubby", entries + ([GRUBENV] if _exists(ex, GRUBENV) else []), [], os_id, editenv)
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
        return Family("grub", [GRUB_DEFAULT, *listed(ex, DROPINS, ".cfg")], regen, os_id)
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
