"""cmdline:KEY on temporary root trees holding the real-format boot files of each family
(tests/fixtures/cmdline/real, SOURCES.md): family detection, the edits, the byte-exact
restore, the reboot and its /proc/cmdline check, the refusals.

RootHost is a host whose / is a temporary directory: files are read and written there and
commands run for real with their absolute path arguments moved under it. The boot tools
are thin fakes in its bin/ (this machine has none of them, and boots nothing):
update-grub and proxmox-boot-tool write the next boot's command line the way the real
ones derive it (grub-mkconfig's 10_linux: the sourced GRUB_CMDLINE_LINUX then
GRUB_CMDLINE_LINUX_DEFAULT, /etc/default/grub.d/*.cfg included; proxmox-boot-tool: the
line of /etc/kernel/cmdline), grubby edits the BLS `options` lines with grubby-bls's
update_args rules, and `reboot` makes that line /proc/cmdline with a new boot id.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from nettune.knobs import bootloader as bl
from nettune.knobs.base import Ctx, KnobError, Loc
from nettune.knobs.registry import KINDS
from nettune.targets import reboot as rb
from nettune.targets.base import CommandResult, HostBase

from boot_readers import bls_boot_args
from conftest import nettune

REAL = Path(__file__).parent / "fixtures" / "cmdline" / "real"
KIND = KINDS["cmdline"]
ROOTED = ("etc", "boot", "proc")

UPDATE_GRUB = r"""#!/bin/sh
. "$NT_ROOT/etc/default/grub"
for f in "$NT_ROOT"/etc/default/grub.d/*.cfg; do [ -f "$f" ] && . "$f"; done
printf '%s\n' "BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=UUID=3f1c ro $GRUB_CMDLINE_LINUX $GRUB_CMDLINE_LINUX_DEFAULT" > "$NT_ROOT/boot/next-cmdline"
"""
PVE_BOOT_TOOL = r"""#!/bin/sh
[ "$1" = refresh ] || exit 2
# proxmox-kernel-helper: the first line of /etc/kernel/cmdline, which must name root=
head -n1 "$NT_ROOT/etc/kernel/cmdline" | grep -q 'root=' || { echo "No root= parameter in /etc/kernel/cmdline found!" >&2; exit 1; }
printf '%s\n' "initrd=\EFI\proxmox\6.8.12-4-pve\initrd.img-6.8.12-4-pve $(head -n1 "$NT_ROOT/etc/kernel/cmdline")" > "$NT_ROOT/boot/next-cmdline"
"""
REBOOT = r"""#!/bin/sh
cp "$NT_ROOT/boot/next-cmdline" "$NT_ROOT/proc/cmdline"
cat /proc/sys/kernel/random/uuid > "$NT_ROOT/proc/sys/kernel/random/boot_id"
"""


class RootHost(HostBase):
    def __init__(self, root: Path, allow_reboot: bool = True):
        self.name, self.address, self.root = "vm1", "192.0.2.10", root
        self.allow_reboot, self.reboot_timeout = allow_reboot, 20.0
        self.calls: list[list[str]] = []

    def _p(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def read_text(self, path: str) -> str:
        return self._p(path).read_text()

    def write_text(self, path: str, text: str) -> None:
        self._p(path).write_text(text)

    def which(self, tool: str) -> str | None:
        return f"/usr/bin/{tool}" if (self.root / "bin" / tool).exists() or (tool == "grubby" and (self.root / "grubby").exists()) else None

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        self.calls.append(list(argv))
        if argv[0] == "grubby":
            return fake_grubby(self, argv)
        mapped = [str(self._p(a)) if a.startswith("/") and a.lstrip("/").split("/")[0] in ROOTED else a for a in argv]
        env = {"PATH": f"{self.root / 'bin'}:/usr/bin:/bin", "NT_ROOT": str(self.root)}
        r = subprocess.run(mapped, capture_output=True, text=True, timeout=timeout, env=env)
        return CommandResult(argv, r.returncode, r.stdout.replace(str(self.root), ""), r.stderr)  # paths as the host sees them


def fake_grubby(h: RootHost, argv: list[str]) -> CommandResult:
    """grubby-bls's --info (rhboot/grubby grubby-bls display_info_values): the entry's
    options lines (`^options[ \t]`) joined, $kernelopts and friends expanded from grubenv,
    root= printed on a line of its own. nettune edits entries itself; grubby only reads."""
    if argv[1] != "--info=DEFAULT":
        return CommandResult(argv, 1, "", f"fake grubby: {argv[1:]} is not expected from nettune")
    args = bls_boot_args(h.root)
    root = next((w[5:] for w in args.split() if w.startswith("root=")), "")
    shown = " ".join(w for w in args.split() if not w.startswith("root="))
    return CommandResult(argv, 0, f'index=0\nkernel="/boot/vmlinuz-x"\nargs="{shown}"\n' + (f'root="{root}"\n' if root else ""), "")


BLS_REBOOT = f"""#!{sys.executable}
# the fake reboot of a BLS host: the boot loader reads the default entry (and grubenv) now
import os, sys, uuid
sys.path.insert(0, {str(Path(__file__).parent)!r})
from pathlib import Path
from boot_readers import bls_boot_args
root = Path(os.environ["NT_ROOT"])
(root / "proc/cmdline").write_text("BOOT_IMAGE=(hd0,gpt2)/vmlinuz-6.11.9-100.fc39.x86_64 " + bls_boot_args(root) + "\\n")
(root / "proc/sys/kernel/random/boot_id").write_text(str(uuid.uuid4()) + "\\n")
"""
GRUB2_EDITENV = """#!/bin/sh
exec grub-editenv "$@"
"""


def make_root(tmp_path: Path, family: str) -> RootHost:
    root = tmp_path / family
    shutil.copytree(REAL / family, root)
    (root / "bin").mkdir()
    (root / "proc/sys/kernel/random").mkdir(parents=True)
    (root / "boot").mkdir(exist_ok=True)
    (root / "proc/sys/kernel/random/boot_id").write_text(str(uuid.uuid4()) + "\n")
    (root / "etc/os-release").write_text({"debian": 'ID=ubuntu\n', "fedora": 'ID=fedora\n', "proxmox": 'ID=debian\n'}[family])
    tools = {"debian": {"update-grub": UPDATE_GRUB}, "proxmox": {"proxmox-boot-tool": PVE_BOOT_TOOL, "update-grub": UPDATE_GRUB},
             "fedora": {"grub2-editenv": GRUB2_EDITENV} if shutil.which("grub-editenv") else {}}[family]
    for name, text in (tools | {"reboot": BLS_REBOOT if family == "fedora" else REBOOT}).items():
        (root / "bin" / name).write_text(text)
        (root / "bin" / name).chmod(0o755)
    if family == "fedora":
        (root / "grubby").write_text("")  # grubby is "installed" (handled by fake_grubby)
    h = RootHost(root)
    if family == "fedora":
        h.run(["reboot"])  # the boot the host is in now
    else:
        h.run({"debian": ["update-grub"], "proxmox": ["proxmox-boot-tool", "refresh"]}[family])
        (root / "proc/cmdline").write_text((root / "boot/next-cmdline").read_text())
    return h


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch):
    monkeypatch.setattr(rb, "POLL", 0.05)


def snapshot(h: RootHost) -> dict[str, bytes]:
    return {str(p.relative_to(h.root)): p.read_bytes() for p in sorted(h.root.rglob("*")) if p.is_file() and "proc" not in p.parts
            and p.name != "next-cmdline"}


LOC = Loc("cmdline:mitigations", "cmdline", "mitigations")


@pytest.mark.parametrize("family, fam_name, edited", [
    ("debian", "grub", "etc/default/grub"),
    ("proxmox", "proxmox", "etc/kernel/cmdline"),
    ("fedora", "grubby", "boot/loader/entries/0649288e52434223afde4c36460a375e-6.11.9-100.fc39.x86_64.conf"),
])
def test_set_reboot_verify_and_restore_byte_exact(tmp_path, family, fam_name, edited):
    h = make_root(tmp_path, family)
    before = snapshot(h)
    boot0 = rb.boot_id(h)
    KIND.validate(h, LOC, "off", ctx := Ctx(host="vm1"))
    assert any("SECURITY" in n for n in ctx.notes)  # mitigations=off warns
    orig = KIND.read(h, LOC)
    assert orig["family"] == fam_name and orig["value"] is None and orig["booted"] is None and edited in {p.lstrip("/") for p in orig["files"]}

    KIND.apply(h, LOC, "off")
    now = KIND.read(h, LOC)
    assert (now["value"], now["booted"]) == ("off", "off") and rb.boot_id(h) != boot0
    assert "mitigations=off" in (h.root / "proc/cmdline").read_text()
    changed = {k for k, v in snapshot(h).items() if before.get(k) != v}
    assert changed == {edited}  # only the family's own file was edited
    old, new = before[edited].decode().splitlines(), (h.root / edited).read_text().splitlines()
    assert len(old) == len(new) and sum(a != b for a, b in zip(old, new)) == 1  # one line changed

    KIND.restore(h, LOC, orig)
    assert snapshot(h) == before  # every byte back
    assert "mitigations" not in (h.root / "proc/cmdline").read_text()
    assert KIND.same(KIND.read(h, LOC), orig)


def test_grub_edit_goes_where_the_key_already_is(tmp_path):
    h = make_root(tmp_path, "debian")
    text = (h.root / "etc/default/grub").read_text().replace('GRUB_CMDLINE_LINUX=""', 'GRUB_CMDLINE_LINUX="mitigations=auto nosmt"')
    (h.root / "etc/default/grub").write_text(text)
    out = bl.grub_set(text, "mitigations", "off")
    assert 'GRUB_CMDLINE_LINUX="mitigations=off nosmt"' in out and 'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash"' in out
    assert bl.grub_set(out, "mitigations", "auto") == text
    assert bl.grub_value(out, "mitigations") == "off" and bl.grub_value(text, "nosmt") is True
    gone = bl.grub_set(text, "nosmt", None)
    assert 'GRUB_CMDLINE_LINUX="mitigations=auto"' in gone and bl.grub_value(gone, "nosmt") is None
    assert 'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash nosmt"' in bl.grub_set(gone, "nosmt", True)  # a new key: normal entries


def test_a_drop_in_that_sets_the_variable_again_is_named_and_the_edit_goes_where_it_reaches(tmp_path):
    """Ubuntu cloud images set GRUB_CMDLINE_LINUX_DEFAULT again in /etc/default/grub.d:
    update-grub sources it after /etc/default/grub, so an edit of /etc/default/grub's
    GRUB_CMDLINE_LINUX_DEFAULT would never reach the kernel (issue 37: today it goes there
    and the point fails after the reboot). The drop-in is named, and the parameter goes
    into GRUB_CMDLINE_LINUX, which does reach it."""
    h = make_root(tmp_path, "debian")
    before = snapshot(h)
    (h.root / "etc/default/grub.d").mkdir()
    cloud = h.root / "etc/default/grub.d/50-cloudimg-settings.cfg"
    cloud.write_text('GRUB_CMDLINE_LINUX_DEFAULT="console=tty1 console=ttyS0"\n')
    before = snapshot(h)
    ctx = Ctx(host="vm1")
    KIND.validate(h, LOC, "off", ctx)
    assert any("50-cloudimg-settings.cfg line 1 sets GRUB_CMDLINE_LINUX_DEFAULT again" in n for n in ctx.notes)
    orig = KIND.read(h, LOC)
    KIND.apply(h, LOC, "off")
    assert 'GRUB_CMDLINE_LINUX="mitigations=off"' in (h.root / "etc/default/grub").read_text()
    assert "mitigations=off" in (h.root / "proc/cmdline").read_text() and cloud.read_text().startswith('GRUB_CMDLINE_LINUX_DEFAULT="console')
    KIND.restore(h, LOC, orig)
    assert snapshot(h) == before


def test_a_drop_in_that_owns_the_setting_is_touched_only_with_the_opt_in(tmp_path):
    """A hardening package's drop-in (Kicksecure security-misc's 40_cpu_mitigations.cfg,
    real, tests/fixtures/cmdline/real/corpus/kicksecure) sets mitigations=auto,nosmt: a
    study's mitigations=off would silently drop nosmt (issue 37). Refused, naming the file
    and the value, in validate (before anything changes) and in the edit itself; with
    override_boot_dropins = true the drop-in's own word is edited, journaled and put back."""
    h = make_root(tmp_path, "debian")
    (h.root / "etc/default/grub.d").mkdir()
    shutil.copy(REAL / "corpus/kicksecure/etc/default/grub.d/40_cpu_mitigations.cfg", h.root / "etc/default/grub.d")
    h.run(["update-grub"])
    (h.root / "proc/cmdline").write_text((h.root / "boot/next-cmdline").read_text())
    before = snapshot(h)
    for check in (lambda: KIND.validate(h, LOC, "off", Ctx(host="vm1")), lambda: KIND.apply(h, LOC, "off")):
        with pytest.raises(KnobError, match=r"/etc/default/grub.d/40_cpu_mitigations.cfg sets mitigations=auto,nosmt \(a security setting another "
                                            r"package made\).*add override_boot_dropins = true to the host"):
            check()
        assert snapshot(h) == before
    h.override_boot_dropins = True
    ctx = Ctx(host="vm1")
    KIND.validate(h, LOC, "off", ctx)
    assert any("40_cpu_mitigations.cfg is edited (override_boot_dropins = true)" in n for n in ctx.notes)
    orig = KIND.read(h, LOC)
    assert orig["value"] == "auto,nosmt" and "/etc/default/grub.d/40_cpu_mitigations.cfg" in orig["files"]
    KIND.apply(h, LOC, "off")
    assert 'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX mitigations=off"' in (h.root / "etc/default/grub.d/40_cpu_mitigations.cfg").read_text()
    assert bl.value_in((h.root / "proc/cmdline").read_text(), "mitigations") == "off"
    KIND.restore(h, LOC, orig)
    assert snapshot(h) == before and bl.value_in((h.root / "proc/cmdline").read_text(), "mitigations") == "auto,nosmt"


def test_restore_keeps_someone_elses_edit_of_the_same_file(tmp_path):
    h = make_root(tmp_path, "proxmox")
    orig = KIND.read(h, LOC)
    KIND.apply(h, LOC, "off")
    f = h.root / "etc/kernel/cmdline"
    f.write_text(f.read_text().replace("boot=zfs", "boot=zfs iommu=pt"))  # an admin's edit meanwhile
    KIND.restore(h, LOC, orig)
    assert f.read_text() == "root=ZFS=rpool/ROOT/pve-1 boot=zfs iommu=pt\n"
    assert "iommu=pt" in (h.root / "proc/cmdline").read_text() and "mitigations" not in (h.root / "proc/cmdline").read_text()


def test_bare_parameter_and_its_removal(tmp_path):
    h = make_root(tmp_path, "proxmox")
    loc = Loc("cmdline:nosmt", "cmdline", "nosmt")
    assert KIND.parse(loc, True) is True and KIND.parse(loc, False) is None
    orig = KIND.read(h, loc)
    KIND.apply(h, loc, True)
    assert (h.root / "etc/kernel/cmdline").read_text() == "root=ZFS=rpool/ROOT/pve-1 boot=zfs nosmt\n"
    assert KIND.read(h, loc)["booted"] is True
    KIND.restore(h, loc, orig)
    assert (h.root / "etc/kernel/cmdline").read_text() == "root=ZFS=rpool/ROOT/pve-1 boot=zfs\n"


def test_no_reboot_when_the_kernel_already_runs_with_the_value(tmp_path):
    h = make_root(tmp_path, "proxmox")
    (h.root / "proc/cmdline").write_text("initrd=x root=ZFS=rpool/ROOT/pve-1 boot=zfs amd_pstate=active\n")
    loc = Loc("cmdline:amd_pstate", "cmdline", "amd_pstate")
    boot0 = rb.boot_id(h)
    KIND.apply(h, loc, "active")
    assert rb.boot_id(h) == boot0 and not any("reboot" in " ".join(c) for c in h.calls)


def test_refused_on_this_machine_without_allow_reboot_and_with_our_boot_id(tmp_path):
    from nettune.targets.local import LocalHost

    h = make_root(tmp_path, "debian")
    with pytest.raises(KnobError, match="never rebooted"):
        KIND.validate(LocalHost("machine"), LOC, "off", Ctx())
    h.allow_reboot = False
    with pytest.raises(KnobError, match=r"does not allow reboots: add allow_reboot = true to \[target.hosts.vm1\]"):
        KIND.validate(h, LOC, "off", Ctx())
    h.allow_reboot = True
    (h.root / "proc/sys/kernel/random/boot_id").write_text(Path(rb.BOOT_ID).read_text())
    with pytest.raises(KnobError, match="has this machine's boot id"):
        KIND.validate(h, LOC, "off", Ctx())


def test_a_host_that_does_not_come_back_fails_bounded(tmp_path):
    h = make_root(tmp_path, "debian")
    (h.root / "bin/reboot").write_text("#!/bin/sh\nexit 0\n")  # accepted, nothing happens
    h.reboot_timeout = 0.5
    with pytest.raises(KnobError, match=r"did not come back from a reboot within 0s \(it kept its boot id"):
        KIND.apply(h, LOC, "off")


def test_no_family_found_says_what_was_looked_for(tmp_path):
    h = make_root(tmp_path, "debian")
    (h.root / "bin/update-grub").unlink()
    (h.root / "etc/default/grub").unlink()
    with pytest.raises(KnobError, match="cannot tell how this host .* sets its kernel command line"):
        KIND.validate(h, LOC, "off", Ctx())


@pytest.mark.parametrize("raw", ["off quiet", 'off"', "$(reboot)", "a;b", "`id`", "x\ny", ""])
def test_hostile_values_are_refused_before_anything(raw):
    with pytest.raises(KnobError):
        KIND.parse(LOC, raw)


def test_grubby_info_and_proc_cmdline_reading():
    info = (REAL / "fedora/grubby-info-ALL.txt").read_text()
    first = info.split("index=1")[0]
    assert bl.grubby_default_args(first).startswith("root=UUID=65c70529-e9ad-4778-9001-18fe8c525285 $tuned_params ro")
    assert bl.value_in(bl.grubby_default_args(first), "rhgb") is True
    line = open("/proc/cmdline").read()
    # this machine's own line: words after a lone -- belong to init
    assert bl.value_in("a=1 -- a=2", "a") == "1" and bl.value_in(line, "nettune_none") is None
    assert bl.value_in("rcupdate.rcu-cpu-stall=1", "rcupdate.rcu_cpu_stall") == "1"  # - and _ alike


WORD = st.text(alphabet="abcdefgh_=.,", min_size=1, max_size=8).filter(lambda w: not w.startswith("="))


@settings(max_examples=200, deadline=None)
@given(words=st.lists(WORD, max_size=6), sep=st.sampled_from([" ", "  ", "\t"]), key=st.sampled_from(["mitigations", "a", "b_c"]),
       value=st.sampled_from(["off", "auto", True]), trail=st.sampled_from(["", " "]))
def test_edit_then_edit_back_gives_the_same_bytes(words, sep, key, value, trail):
    """A command line's words in any spacing: the edit sets the key (the kernel reads the
    last occurrence), and the edit back to what it was gives the file's bytes again."""
    fam = bl.Family("proxmox", [bl.KERNEL_CMDLINE])
    text = "root=ZFS=rpool " + sep.join(words) + trail + "\n"
    had = bl.value_in(text, key)
    if sum(bl.same_key(w.partition("=")[0], key) for w in text.split()) > 1:
        return  # a repeated key: the last one is edited, the others stay (the kernel reads the last)
    edited = fam.edit({bl.KERNEL_CMDLINE: text}, key, value).files.get(bl.KERNEL_CMDLINE, text)
    assert bl.value_in(edited, key) == value
    assert fam.edit({bl.KERNEL_CMDLINE: edited}, key, had).files.get(bl.KERNEL_CMDLINE, edited) == text


def test_dry_run_commands_name_every_family():
    lines = KIND.commands(LOC, "off")
    # nettune edits BLS entries itself (grubby copies joined options to every options line)
    assert "edit /boot/loader/entries/*.conf: set mitigations=off" in lines[0] and "update-grub" in lines[1]
    assert "proxmox-boot-tool refresh" in lines[2] and lines[-1] == "reboot"


def test_manual_restore_commands_put_the_exact_bytes_back(tmp_path):
    h = make_root(tmp_path, "proxmox")
    orig = KIND.read(h, LOC)
    KIND.apply(h, LOC, "off")
    for line in KIND.commands(LOC, orig)[:1]:  # printf %s '<bytes>' > /etc/kernel/cmdline
        path = line.rsplit("> ", 1)[1]
        subprocess.run(["sh", "-c", line.replace(path, str(h.root) + path)], check=True)
    assert (h.root / "etc/kernel/cmdline").read_text() == "root=ZFS=rpool/ROOT/pve-1 boot=zfs\n"


# -- the plan: allow_reboot, refusals at plan time, the order of points, the dry run -----

PLAN = """
name = "boot"
[target]
kind = "ssh"
{inventory}
[target.hosts.vm1]
address = "192.0.2.10"
{allow}
[target.hosts.vm2]
address = "192.0.2.11"
[workload]
server = "vm1"
client = "vm2"
duration = 1
[repeat]
runs = 2
[sweep]
streams = [1, 2]
mit = ["off", "auto"]
[knobs]
"cmdline:mitigations" = "{{mit}}"
[knobs.hosts]
"cmdline:mitigations" = ["vm1"]
"""


def plan(text: str):
    from nettune import parse_study
    from nettune.plan.points import expand_and_check

    study = parse_study(text, "s.toml")
    return study, expand_and_check(study, text, "s.toml")


def test_points_are_grouped_so_the_boot_value_changes_once_per_value():
    from nettune.plan.points import schedule
    from nettune.plan.run_order import costly_changes, run_groups, run_order

    text = PLAN.format(inventory="", allow="allow_reboot = true")
    study, resolved = plan(text)
    slots = schedule(study, [r.point for r in resolved])
    mit = {r.point.index: r.extra["knobs"]["cmdline:mitigations"] for r in resolved}
    flips = lambda ss: sum(mit[a.point.index] != mit[b.point.index] for a, b in zip(ss, ss[1:]))  # noqa: E731
    assert flips(slots) >= 3  # the interleaved schedule alternates (streams is the outer parameter)
    ordered = run_order(study, resolved)
    key = lambda s: (s.point.index, s.run, s.warmup)  # noqa: E731
    assert sorted(ordered, key=key) == sorted(slots, key=key) and flips(ordered) == 1
    assert [(s.point.index, s.run) for s in ordered if mit[s.point.index] == "off"][:2] == [(i, 0) for i in sorted(i for i in mit if mit[i] == "off")]
    # "auto" is the kernel's default: absent from the command line, already in force
    assert [c.shown() for c in costly_changes(ordered, resolved)] == ["cmdline:mitigations=off (vm1)", "cmdline:mitigations=auto (vm1)",
                                                                     "the original values"]
    groups = run_groups(study, resolved)
    assert [s for g in groups for s in g] == ordered and len(groups) == 2
    assert [sorted({s.point.index for s in g}) for g in groups] == [sorted(i for i in mit if mit[i] == v) for v in ("off", "auto")]


def test_a_plan_without_boot_knobs_keeps_its_order():
    from nettune.plan.points import schedule
    from nettune.plan.run_order import run_groups, run_order

    study, resolved = plan(PLAN.format(inventory="", allow="").split("[knobs]")[0])
    slots = schedule(study, [r.point for r in resolved])
    assert run_order(study, resolved) == slots and run_groups(study, resolved) == [slots]


def test_refused_at_plan_time_with_one_line_naming_the_knob(tmp_path):
    from nettune.errors import SpecError

    text = PLAN.format(inventory="", allow="")
    with pytest.raises(SpecError, match=r"^s.toml:\d+: knobs.cmdline:mitigations: cmdline:mitigations = off: needs a reboot of vm1, which does "
                                        r"not allow one: add allow_reboot = true to \[target.hosts.vm1\]"):
        plan(text)
    lab = 'name = "l"\n[target]\nkind = "lab"\nhosts = ["a", "b"]\n[workload]\nserver = "a"\nclient = "b"\n[knobs]\n"cmdline:mitigations" = "off"\n'
    with pytest.raises(SpecError, match="a lab target's hosts are this machine, the one nettune runs on, which is never rebooted"):
        plan(lab)
    (tmp_path / "lab.toml").write_text(lab)
    r = nettune("run", str(tmp_path / "lab.toml"), "--dry-run")
    assert r.returncode != 0 and r.stdout.count("\n") + r.stderr.count("\n") <= 1 and "never rebooted" in r.stdout + r.stderr


def test_allow_reboot_from_a_toml_inventory_and_an_ansible_one(tmp_path):
    (tmp_path / "inv.toml").write_text('[hosts.vm1]\naddress = "192.0.2.10"\nallow_reboot = true\nreboot_timeout = 900\n')
    study, _ = plan(PLAN.format(inventory=f'inventory = "{tmp_path / "inv.toml"}"', allow=""))
    assert study.target.hosts["vm1"].allow_reboot and study.target.hosts["vm1"].reboot_timeout == 900
    assert not study.target.hosts["vm2"].allow_reboot
    from nettune.studyfile.ansible_inventory import load_ansible

    (tmp_path / "hosts.ini").write_text("[lab]\nvm1 ansible_host=192.0.2.10 nettune_allow_reboot=true nettune_reboot_timeout=300\n"
                                        "vm2 ansible_host=192.0.2.11 nettune_allow_reboot=false\n")
    hosts = load_ansible(tmp_path / "hosts.ini", None)
    assert hosts["vm1"]["allow_reboot"] is True and int(hosts["vm1"]["reboot_timeout"]) == 300 and hosts["vm2"]["allow_reboot"] is False


def test_dry_run_shows_every_reboot_its_commands_and_the_security_warning():
    from nettune.commands.dry_run import dry_run

    text = PLAN.format(inventory="", allow="allow_reboot = true")
    study, _ = plan(text)
    d = dry_run(study, text, "s.toml")
    notes = [n for p in d.planned for n in p.notes]
    boots = [n for n in notes if n.startswith("REBOOT")]
    assert len(boots) == 3 and "after the last test" in boots[-1]
    assert "edit /boot/loader/entries/*.conf: set mitigations=off" in boots[0] and "proxmox-boot-tool refresh" in boots[0]
    # auto is the kernel's default: the edit removes the parameter, and a host without it needs neither edit nor reboot
    assert "-> absent" in boots[1] and "remove mitigations" in boots[1] and "proxmox-boot-tool refresh" in boots[1]
    assert "unless the host's command line already has mitigations absent, which is the kernel's default mitigations=auto" in boots[1]
    assert all("override_boot_dropins = true" in n for n in boots[:2])  # a drop-in is named before it is touched
    assert sum(n.startswith("SECURITY: cmdline:mitigations=off") for n in notes) == 1


def test_killed_between_the_edit_and_the_reboot_the_journal_restores_without_a_reboot(tmp_path):
    """kill -9 after the edit, before the reboot: the change has no read-back in the
    journal; the configuration holds nettune's value, so it is nettune's to put back, and
    the kernel still runs with the original, so no reboot is needed."""
    from nettune.knobs.journal import Journal
    from nettune.knobs.places import Place
    from nettune.knobs.restore import restore_changes

    h = make_root(tmp_path, "debian")
    before = snapshot(h)
    orig = KIND.read(h, LOC)
    j = Journal(tmp_path / "journal.jsonl")
    sid = j.begin("s", None)
    rec = j.change(sid, 1, "s", "vm1", LOC.record(), {"type": "remote", "label": "vm1", "key": "remote:vm1"}, orig, "off")
    grub = h.root / "etc/default/grub"
    grub.write_text(bl.grub_set(grub.read_text(), "mitigations", "off"))  # the edit, then the kill
    boot0 = rb.boot_id(h)
    out = restore_changes(j, sid, [rec], lambda _r: (Place("vm1", "remote", h), ""))
    assert [r for r, _t in out.lines] == ["restored"] and not out.failed
    assert snapshot(h) == before and rb.boot_id(h) == boot0  # bytes back, no reboot
    assert j.open_sessions()[0].changes == []


def test_persist_gives_a_note_never_a_shell_line():
    p = KIND.persisted(LOC, "off")
    assert p.shell == [] and "grubby --update-kernel=ALL --args=mitigations=off" in p.notes[0]
    assert any(r["kind"] == "cmdline" and "allow_reboot" in r["what"] for r in KIND.catalog())
