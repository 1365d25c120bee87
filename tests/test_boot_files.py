"""Issue 37: boot configurations read and edited as their boot loader reads them, on the
temporary root trees of test_cmdline_knobs.py, checked against the loaders' own readings
written independently in boot_readers.py (the real grub-mkconfig for /etc/default/grub,
the Boot Loader Specification for BLS entries with the real grub-editenv for grubenv,
kernel-install's own shell pipeline for /etc/kernel/cmdline), and every edit put back
byte for byte. The corpus (tests/fixtures/cmdline/real/corpus, SOURCES.md) is real files
from public repositories.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nettune.knobs import bootloader as bl
from nettune.knobs.base import Ctx, KnobError, Loc

from boot_readers import bls_boot_args, bls_entry_args, grub_mkconfig_args, grub_mkconfig_ready, grubenv_list, kernel_install_args
from test_cmdline_knobs import KIND, LOC, REAL, RootHost, make_root, quick_polls, snapshot  # noqa: F401 (quick_polls: autouse)

CORPUS = REAL / "corpus"
NOSMT = Loc("cmdline:nosmt", "cmdline", "nosmt")
needs_grub_mkconfig = pytest.mark.skipif(bool(grub_mkconfig_ready()), reason=grub_mkconfig_ready() or "ready")
needs_editenv = pytest.mark.skipif(shutil.which("grub-editenv") is None, reason="grub-editenv is not installed (scripts/env.sh installs grub-common)")


def words_without(args: str, key: str) -> list[str]:
    return [w for w in args.split() if w.partition("=")[0].replace("-", "_") != key.replace("-", "_")]


def loader_value(args: str, key: str):
    found = [w for w in args.split() if w.partition("=")[0].replace("-", "_") == key.replace("-", "_")]
    if not found:
        return None
    name, eq, val = found[-1].partition("=")
    return val if eq else True


# --- BLS entries: several options lines, a tab, none, $kernelopts -----------------------

ENTRY = "/boot/loader/entries/0649288e52434223afde4c36460a375e-6.11.9-100.fc39.x86_64.conf"


def bls_root(tmp_path: Path, entry_text: str, grubenv: dict[str, str] | None = None) -> RootHost:
    h = make_root(tmp_path, "fedora")
    (h.root / ENTRY.lstrip("/")).write_text(entry_text)
    if grubenv is not None:
        (h.root / "boot/grub2").mkdir(parents=True)
        env = h.root / "boot/grub2/grubenv"
        subprocess.run(["grub-editenv", str(env), "create"], check=True)
        for k, v in grubenv.items():
            subprocess.run(["grub-editenv", str(env), "set", f"{k}={v}"], check=True)
    h.run(["reboot"])  # boots the entry as it is now
    return h


def applied_and_restored(h: RootHost, loc: Loc, value, expect_changed: set[str]) -> None:
    before = snapshot(h)
    orig = KIND.read(h, loc)
    KIND.apply(h, loc, value)
    assert {k for k, v in snapshot(h).items() if before.get(k) != v} == expect_changed
    assert loader_value(bls_boot_args(h.root), loc.arg) == bl.parse_value(value)
    KIND.restore(h, loc, orig)
    assert snapshot(h) == before  # byte for byte, grubenv included


def test_bls_entry_with_several_options_lines_is_edited_in_one_place(tmp_path):
    """The loader joins every `options` line; nettune read the first only, wrote the key
    on every line, and its edit back took the user's own occurrence too (issue 37)."""
    text = (REAL / "fedora" / ENTRY.lstrip("/")).read_text().replace(" rhgb ", " rhgb\noptions mitigations=auto ")
    h = bls_root(tmp_path, text)
    assert "mitigations=auto" in bls_boot_args(h.root)
    orig = KIND.read(h, LOC)
    assert orig["value"] is None  # mitigations=auto is the kernel's default: read as absent (canonical); the files keep its text
    KIND.apply(h, LOC, "off")
    new = (h.root / ENTRY.lstrip("/")).read_text()
    assert new == text.replace("mitigations=auto", "mitigations=off")  # the second options line, nothing else
    assert bls_boot_args(h.root).split().count("mitigations=off") == 1
    KIND.restore(h, LOC, orig)
    assert (h.root / ENTRY.lstrip("/")).read_text() == text
    applied_and_restored(h, NOSMT, True, {ENTRY.lstrip("/")})  # a new key: at the end of the last options line


@pytest.mark.parametrize("line", ["options\troot=UUID=a7e970a5 ro quiet\n", "options \t root=UUID=a7e970a5 ro quiet  \n", ""])
def test_bls_entry_with_a_tab_or_without_options(tmp_path, line):
    """A tab after `options` (the spec allows any whitespace) or no options line at all:
    the project's grubby fake crashed on both, so the real path was never run (issue 37)."""
    base = "title Fedora Linux\nversion 6.11.9-100.fc39.x86_64\nlinux /boot/vmlinuz-6.11.9-100.fc39.x86_64\n"
    h = bls_root(tmp_path, base + line)
    applied_and_restored(h, LOC, "off", {ENTRY.lstrip("/")})
    if not line:
        KIND.apply(h, LOC, "off")
        assert (h.root / ENTRY.lstrip("/")).read_text() == base + "options mitigations=off\n"


@needs_editenv
def test_bls_entry_reading_kernelopts_is_edited_in_grubenv_with_the_distributions_tool(tmp_path):
    """RHEL 8's entries say `options $kernelopts $tuned_params` (a real one: the Rocky
    Linux documentation's, corpus/rocky8-docs): nettune appended to that literal line and
    did not keep grubenv (issue 37). Now kernelopts is set with grub2-editenv, the entry is
    left alone, and grubenv comes back byte for byte."""
    entry = (CORPUS / "rocky8-docs/boot/loader/entries/6fa25ca775f64accb0d3e53f0e4e6e92-5.16.9-custom.conf").read_text()
    kernelopts = (CORPUS / "rhel9-7dipali8/etc/kernel/cmdline").read_text().strip()
    h = bls_root(tmp_path, entry, {"kernelopts": kernelopts, "saved_entry": "x"})
    assert bls_boot_args(h.root) == kernelopts
    orig = KIND.read(h, LOC)
    assert "/boot/grub2/grubenv" in orig["files"]  # journaled byte for byte
    KIND.apply(h, LOC, "off")
    assert (h.root / ENTRY.lstrip("/")).read_text() == entry
    assert grubenv_list(h.root / "boot/grub2/grubenv")["kernelopts"] == kernelopts + " mitigations=off"
    assert ["grub2-editenv", "/boot/grub2/grubenv", "set", f"kernelopts={kernelopts} mitigations=off"] in h.calls
    assert loader_value((h.root / "proc/cmdline").read_text(), "mitigations") == "off"
    KIND.restore(h, LOC, orig)
    assert (h.root / "boot/grub2/grubenv").read_bytes() == orig["files"]["/boot/grub2/grubenv"].encode()
    # tuned's own variable is another package's: named, and left alone without the opt-in
    h2 = bls_root(tmp_path / "t", entry, {"kernelopts": kernelopts, "tuned_params": "skew_tick=1 nohz=on"})
    with pytest.raises(KnobError, match=r"grubenv's \$tuned_params \(nohz=on\), another tool's setting .*override_boot_dropins = true"):
        KIND.validate(h2, Loc("cmdline:nohz", "cmdline", "nohz"), "off", Ctx(host="vm1"))


# --- /etc/kernel/cmdline ---------------------------------------------------------------

def test_kernel_cmdline_is_read_as_kernel_install_reads_it():
    """iDigitalFlame's real /etc/kernel/cmdline opens with a comment banner: kernel-install
    skips comment lines and joins the rest; nettune read line 1 (the comment) and would
    have appended the parameter to it, missing the mitigations=off further down."""
    path = CORPUS / "arch-idigitalflame/etc/kernel/cmdline"
    from nettune.knobs.boot_bls import kernel_cmdline_traced

    ours = " ".join(kernel_cmdline_traced("/etc/kernel/cmdline", path.read_text()).text.split())
    assert ours == kernel_install_args(path) and bl.value_in(ours, "mitigations") == "off"


def test_proxmox_refuses_a_kernel_cmdline_its_tool_and_kernel_install_read_differently(tmp_path):
    """proxmox-boot-tool takes line 1 alone (and stops without root= there): a comment on
    line 1 is refused with the reason, before anything changes."""
    h = make_root(tmp_path, "proxmox")
    f = h.root / "etc/kernel/cmdline"
    f.write_text("# set by the installer\n" + f.read_text())
    before = snapshot(h)
    with pytest.raises(KnobError, match=r"/etc/kernel/cmdline: line 1 is a comment; proxmox-boot-tool takes the command line from line 1 alone"):
        KIND.validate(h, LOC, "off", Ctx(host="vm1"))
    assert snapshot(h) == before
    f.write_text("root=ZFS=rpool/ROOT/pve-1 boot=zfs\n# comments after the command line are fine\n")
    h.run(["proxmox-boot-tool", "refresh"])
    (h.root / "proc/cmdline").write_text((h.root / "boot/next-cmdline").read_text())
    before = snapshot(h)
    orig = KIND.read(h, LOC)
    KIND.apply(h, LOC, "off")
    assert f.read_text() == "root=ZFS=rpool/ROOT/pve-1 boot=zfs mitigations=off\n# comments after the command line are fine\n"
    assert kernel_install_args(f) == "root=ZFS=rpool/ROOT/pve-1 boot=zfs mitigations=off"
    KIND.restore(h, LOC, orig)
    assert snapshot(h) == before


# --- /etc/default/grub with shell semantics ---------------------------------------------

SHELL_CASES = {
    "trailing comment": 'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash" # set by the installer\nGRUB_CMDLINE_LINUX=""\n',
    "comment on the other variable": 'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\nGRUB_CMDLINE_LINUX="" # keep empty\n',
    "continued value": 'GRUB_CMDLINE_LINUX_DEFAULT="quiet \\\n    splash mitigations=auto"\nGRUB_CMDLINE_LINUX=""\n',
    "single quotes, export": "export GRUB_CMDLINE_LINUX_DEFAULT='quiet splash'\nGRUB_CMDLINE_LINUX=\n",
}


@needs_grub_mkconfig
@pytest.mark.parametrize("name", sorted(SHELL_CASES))
def test_default_grub_in_ordinary_shell_is_edited_and_grub_mkconfig_agrees(tmp_path, name):
    """Refused as "not a plain quoted string" before (issue 37): ordinary shell that GRUB
    reads fine. Each edit is checked on the `linux` line the real grub-mkconfig writes."""
    h = make_root(tmp_path, "debian")
    text = SHELL_CASES[name]
    (h.root / "etc/default/grub").write_text(text)
    h.run(["update-grub"])
    (h.root / "proc/cmdline").write_text((h.root / "boot/next-cmdline").read_text())
    before_args = grub_mkconfig_args({"/etc/default/grub": text})
    before = snapshot(h)
    orig = KIND.read(h, LOC)
    KIND.apply(h, LOC, "off")
    after = (h.root / "etc/default/grub").read_text()
    after_args = grub_mkconfig_args({"/etc/default/grub": after})
    assert loader_value(after_args, "mitigations") == "off" and words_without(after_args, "mitigations") == words_without(before_args, "mitigations")
    assert [ln.split("#")[1] for ln in after.splitlines() if "#" in ln] == [ln.split("#")[1] for ln in text.splitlines() if "#" in ln]  # comments kept
    KIND.restore(h, LOC, orig)
    assert snapshot(h) == before


def test_what_cannot_be_edited_safely_is_refused_with_the_line():
    cases = {
        'GRUB_CMDLINE_LINUX="$(cat /etc/cmdline.local)"\n': r"line 1: GRUB_CMDLINE_LINUX uses the output of \$\(cat /etc/cmdline.local\)",
        'if [ -d /sys/firmware/efi ]; then\n  GRUB_CMDLINE_LINUX="quiet"\nfi\n': r"line 2: GRUB_CMDLINE_LINUX is set inside an if/case/loop",
        'GRUB_CMDLINE_LINUX="quiet" GRUB_TIMEOUT=1\n': r"line 1: GRUB_CMDLINE_LINUX=... is followed by 'GRUB_TIMEOUT=1'",
        'unset GRUB_CMDLINE_LINUX\n': r"line 1: 'unset GRUB_CMDLINE_LINUX' uses GRUB_CMDLINE_LINUX\* in a command",
        'GRUB_CMDLINE_LINUX="mitig"ations=auto\n': r"written with quotes or escapes inside it",
    }
    for text, why in cases.items():
        with pytest.raises(KnobError, match=why):
            bl.grub_set(text, "mitigations", "off")


# --- the corpus: real files, every edit against the loader's own reading ----------------

DEBIAN_GRUB = REAL / "debian/etc/default/grub"


def grub_case(*files: Path, base: Path | None = None) -> dict[str, str]:
    """path on the host -> text, /etc/default/grub first (a case of drop-ins alone gets
    Debian's own /etc/default/grub, as the package that ships them is installed on Debian)."""
    out = {"/etc/default/grub": (base or DEBIAN_GRUB).read_text()}
    for f in files:
        at = "/etc/default/grub" if f.name == "grub" else f"/etc/default/grub.d/{f.name}"
        out[at] = f.read_text()
    return out


def corpus_files(case: str, sub: str) -> list[Path]:
    d = CORPUS / case / sub
    return sorted(d.iterdir()) if d.is_dir() else ([d] if d.is_file() else [])


GRUB_CORPUS: dict[str, tuple[dict[str, str], bool]] = {  # case -> (files, override_boot_dropins)
    "debian (grub2 package)": (grub_case(), False),
    "rocky 9": (grub_case(base=REAL / "fedora/etc/default/grub"), False),
    "proxmox zfs snippet": (grub_case(REAL / "proxmox/etc/default/grub.d/zfs.cfg"), False),
    **{case: (grub_case(*corpus_files(case, "etc/default/grub.d"), base=CORPUS / case / "etc/default/grub"), False)
       for case in ("rhel9-7dipali8", "debian-harden-BenTGNU", "arch-grapheneos", "arch-edu4rdshl", "ubuntu-cloud-matsuu")},
    "kicksecure security-misc": (grub_case(*(CORPUS / "kicksecure/etc/default/grub.d" / f for f in
                                             ("40_cpu_mitigations.cfg", "40_kernel_hardening.cfg", "41_recovery_restrict.cfg"))), False),
    "kicksecure, opted in": (grub_case(*(CORPUS / "kicksecure/etc/default/grub.d" / f for f in
                                         ("40_cpu_mitigations.cfg", "40_kernel_hardening.cfg", "41_recovery_restrict.cfg"))), True),
}


def owned_by_a_drop_in(files: dict[str, str], key: str) -> bool:
    """A key a drop-in writes (read here with a plain search, not nettune's reader): only
    with override_boot_dropins = true may nettune change it."""
    pattern = re.compile(rf"(^|[\s\"']){re.escape(key)}(=|[\s\"']|$)", re.M)
    return any(pattern.search(text) for path, text in files.items() if path.startswith("/etc/default/grub.d/"))


def GRUB_DEFAULT_KEYS(files: dict[str, str]) -> set[str]:  # noqa: N802 - a key /etc/default/grub itself writes last
    return {w.partition("=")[0] for w in re.findall(r"[\w.-]+(?:=\S*)?", files["/etc/default/grub"])}


def ops(args: str) -> list[tuple[str, object]]:
    """The edits tried on a command line: two new or existing security keys, a key=value
    word's value changed, and the first word removed."""
    kv = [w for w in args.split() if "=" in w]
    out: list[tuple[str, object]] = [("mitigations", "off"), ("nosmt", True)]
    if kv:
        out.append((kv[-1].partition("=")[0], "1"))
    if args.split():
        out.append((args.split()[0].partition("=")[0], None))
    return out


@needs_grub_mkconfig
@pytest.mark.parametrize("case", sorted(GRUB_CORPUS))
def test_grub_corpus_every_edit_reaches_grub_mkconfigs_linux_line(case):
    files, opt_in = GRUB_CORPUS[case]
    fam = bl.Family("grub", list(files))
    before = grub_mkconfig_args(files)
    tried = 0
    for key, value in ops(before):
        try:
            edit = fam.edit(files, key, value, opt_in)
        except KnobError as e:
            assert not opt_in and owned_by_a_drop_in(files, key), f"{case}: {key}={value} refused: {e}"
            assert str(e).count("\n") == 0 and "/etc/default/grub.d/" in str(e) and "override_boot_dropins = true" in str(e)
            assert ("security setting another package made" in str(e)) == (key in bl.SECURITY_KEYS)
            continue
        assert opt_in or not owned_by_a_drop_in(files, key) or key in GRUB_DEFAULT_KEYS(files), f"{case}: {key} should have been refused"
        after = grub_mkconfig_args(files | edit.files)
        want = bl.parse_value(value) if value is not None else None
        assert loader_value(after, key) == want, (case, key, value, after)
        assert words_without(after, key) == words_without(before, key), (case, key)
        tried += 1
    assert tried >= 2 or all(owned_by_a_drop_in(files, k) for k, _ in ops(before))  # a case whose words are all a package's


def test_grub_corpus_refuses_what_it_cannot_read():
    """Kicksecure's 41_quiet_boot.cfg takes GRUB_CMDLINE_LINUX_DEFAULT from a command's
    output: nettune cannot tell the command line, and says which file and line."""
    files = grub_case(CORPUS / "kicksecure/etc/default/grub.d/41_quiet_boot.cfg")
    with pytest.raises(KnobError, match=r"^/etc/default/grub.d/41_quiet_boot.cfg line \d+: GRUB_CMDLINE_LINUX_DEFAULT uses the output of \$\(echo"):
        bl.Family("grub", list(files)).edit(files, "mitigations", "off")


BLS_CORPUS = [REAL / "fedora" / ENTRY.lstrip("/"), *corpus_files("arch-grapheneos", "boot/loader/entries"), *corpus_files("arch-edu4rdshl", "boot/loader/entries")]


@pytest.mark.parametrize("entry", BLS_CORPUS, ids=lambda p: p.name)
def test_bls_corpus_every_edit_as_the_specification_reads_it(entry):
    text = entry.read_text()
    fam = bl.Family("grubby", ["/e.conf"])
    before = bls_entry_args(text, {})
    for key, value in ops(before):
        new = fam.edit({"/e.conf": text}, key, value).files.get("/e.conf", text)
        after = bls_entry_args(new, {})
        assert loader_value(after, key) == (bl.parse_value(value) if value is not None else None), (entry.name, key)
        assert words_without(after, key) == words_without(before, key)
        assert sum(a != b for a, b in zip(text.splitlines(), new.splitlines())) <= 1 and len(new.splitlines()) == len(text.splitlines())


KERNEL_CMDLINE_CORPUS = {"proxmox installer": REAL / "proxmox/etc/kernel/cmdline", **{c: CORPUS / c / "etc/kernel/cmdline" for c in
                         ("proxmox-adrianlsy", "rhel9-7dipali8", "arch-sourlemonjuice", "arch-idigitalflame")}}


@pytest.mark.parametrize("case", sorted(KERNEL_CMDLINE_CORPUS))
def test_kernel_cmdline_corpus_as_kernel_install_and_proxmox_boot_tool_read_it(case, tmp_path):
    path = KERNEL_CMDLINE_CORPUS[case]
    text = path.read_text()
    fam = bl.Family("proxmox", [bl.KERNEL_CMDLINE])
    if case == "arch-idigitalflame":  # its comment banner is line 1: proxmox-boot-tool would read that
        with pytest.raises(KnobError, match="line 1 is a comment"):
            fam.edit({bl.KERNEL_CMDLINE: text}, "mitigations", "on")
        return
    before = kernel_install_args(path)
    for key, value in ops(before):
        new = fam.edit({bl.KERNEL_CMDLINE: text}, key, value).files.get(bl.KERNEL_CMDLINE, text)
        out = tmp_path / f"{key}.cmdline"
        out.write_text(new)
        after = kernel_install_args(out)
        assert loader_value(after, key) == (bl.parse_value(value) if value is not None else None)
        assert words_without(after, key) == words_without(before, key)
        assert new.split("\n", 1)[1:] == text.split("\n", 1)[1:]  # proxmox-boot-tool's line 1 is the one edited


GRUB_MKCONFIG_UPDATE = f"""#!{__import__("sys").executable}
# update-grub on a root tree: the real grub-mkconfig in a private mount namespace (boot_readers.py)
import os, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from pathlib import Path
from boot_readers import grub_mkconfig_args
root = Path(os.environ["NT_ROOT"])
files = {{"/etc/default/grub": (root / "etc/default/grub").read_text()}}
d = root / "etc/default/grub.d"
files |= {{f"/etc/default/grub.d/{{p.name}}": p.read_text() for p in sorted(d.glob("*.cfg"))}} if d.is_dir() else {{}}
(root / "boot/next-cmdline").write_text("BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=/dev/sda2 ro " + grub_mkconfig_args(files) + "\\n")
"""


@needs_grub_mkconfig
@pytest.mark.parametrize("case", ["debian-harden-BenTGNU", "ubuntu-cloud-matsuu", "kicksecure, opted in", "rhel9-7dipali8"])
def test_grub_corpus_apply_reboot_and_restore_byte_for_byte(tmp_path, case):
    """The whole path on a root tree holding the case's real files, update-grub being the
    real grub-mkconfig: the kernel gets the value, and restore gives every byte back."""
    files, opt_in = GRUB_CORPUS[case]
    h = make_root(tmp_path, "debian")
    h.override_boot_dropins = opt_in
    for path, text in files.items():
        (h.root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (h.root / path.lstrip("/")).write_text(text)
    (h.root / "bin/update-grub").write_text(GRUB_MKCONFIG_UPDATE)
    h.run(["update-grub"])
    (h.root / "proc/cmdline").write_text((h.root / "boot/next-cmdline").read_text())
    before = snapshot(h)
    for loc, value in ((LOC, "off"), (NOSMT, True)):
        orig = KIND.read(h, loc)
        KIND.apply(h, loc, value)
        assert loader_value((h.root / "proc/cmdline").read_text(), loc.arg) == bl.parse_value(value)
        KIND.restore(h, loc, orig)
        assert snapshot(h) == before


def test_a_journaled_reading_naming_another_file_is_not_written(tmp_path):
    """What restore writes back comes from a journal on disk: only the boot files a family edits."""
    h = make_root(tmp_path, "debian")
    orig = KIND.read(h, LOC)
    assert all(bl.boot_file(p) for p in orig["files"])
    bad = orig | {"files": {"/etc/shadow": "root::0:0:99999:7:::\n"}}
    with pytest.raises(KnobError, match="names '/etc/shadow', not a boot configuration file"):
        KIND.restore(h, LOC, bad)
    assert not (h.root / "etc/shadow").exists()
