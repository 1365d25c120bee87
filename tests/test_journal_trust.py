"""The journal is verified before it is obeyed (issue 33): crafted records, a journal
someone else could write, an edited or cut journal, a command knob the study does not
declare. Every case is a journal written the way an attacker or a damaged disk would
leave it; `nettune restore` (and --restore-first, and `lab down`) must report it and
act on nothing. No root needed except where a file must belong to another user.
"""
from __future__ import annotations

import hashlib
import json
import os
import textwrap
from pathlib import Path

import pytest

from nettune.errors import NettuneError
from nettune.knobs.journal import Journal

from conftest import IS_ROOT, nettune


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


DEAD = {"pid": 999999999, "pid_start": "1", "time": 1.0}


def begin(j: Journal, sid: str = "crafted", **extra) -> None:
    j.append({"op": "begin", "session": sid, "study": "s", **DEAD, **extra})


def sysctl_change(j: Journal, arg: str, original: str, new: str, place: dict | None = None, kind: str = "sysctl", sid: str = "crafted") -> None:
    loc = {"key": f"{kind}:{arg}", "kind": kind, "arg": arg, "device": None}
    j.append({"op": "change", "session": sid, "seq": 1, "study": "s", "host": "machine", "knob": loc["key"], "loc": loc,
              "place": place or {"type": "machine", "label": "machine", "key": "machine"}, "ident": {}, "original": original, "new": new})


def traversal_to(path: Path) -> str:
    """A sysctl "name" that /proc/sys/NAME turns into `path`."""
    return "../.." + str(path)


def restore(*args: str):
    return nettune("restore", *args, env={**os.environ})


def test_a_crafted_sysctl_record_never_writes_outside_proc_sys(tmp_path):
    """The issue's proof: a record with sysctl arg ../../FILE, new = the file's content,
    original = PWNED made `nettune restore` overwrite FILE."""
    victim = tmp_path / "victim"
    victim.write_text("KEEP")
    j = Journal()
    begin(j)
    sysctl_change(j, traversal_to(victim), "PWNED", "KEEP")
    r = restore()
    assert victim.read_text() == "KEEP", r.stdout
    assert r.returncode == 1 and "not acted on" in r.stdout and "not a sysctl name" in r.stdout, r.stdout + r.stderr
    assert len(Journal().open_sessions()) == 1  # left pending, for the user to look at
    r = restore("--forget")
    assert victim.read_text() == "KEEP" and "check this setting by hand" in r.stdout and "PWNED" not in r.stdout
    assert Journal().open_sessions() == []


NOT_CURRENT = "nettune-test-never-the-current-value"


@pytest.mark.parametrize("arg", ["kernel//core_pattern", "kernel/./core_pattern", "kernel/core_pattern", "kernel.core_pattern",
                                 "kernel.modprobe", "kernel.poweroff_cmd", "vm.mmap_min_addr", "vm.unprivileged_userfaultfd"])
def test_a_denied_sysctl_in_a_journal_is_never_written(arg):
    """A record naming a sysctl of the denylist, in any spelling, is refused at restore,
    before anything is read or written. The record's `new` is never the machine's value,
    so even a restore without the check would leave it ("changed by someone else"): this
    test cannot change the machine whatever the code under test does."""
    path = Path("/proc/sys/" + (arg if "/" in arg else arg.replace(".", "/")))
    before = path.read_text() if path.exists() else None
    j = Journal()
    begin(j)
    sysctl_change(j, arg, "|/tmp/pwn %p", NOT_CURRENT)
    r = restore()
    assert r.returncode == 1 and "not acted on" in r.stdout, r.stdout
    assert (path.read_text() if path.exists() else None) == before


def study_file(tmp_path: Path, setting: Path) -> Path:
    f = tmp_path / "s.toml"
    f.write_text(textwrap.dedent(f"""
        name = "tj"
        [target]
        kind = "local"
        [workload]
        duration = 1
        [knobs]
        "command:f" = {{value = "new", read = ["cat", "{setting}"], apply = 'printf %s "$1" > {setting}'}}
        """))
    return f


def command_change(j: Journal, setting: Path, restore_cmd: str, sid: str = "crafted") -> None:
    spec = {"read": ["cat", str(setting)], "apply": f'printf %s "$1" > {setting}', "restore": restore_cmd, "scope": "host"}
    loc = {"key": "command:f", "kind": "command", "arg": "f", "device": None, "spec": spec}
    j.append({"op": "change", "session": sid, "seq": 1, "study": "tj", "host": "machine", "knob": "command:f", "loc": loc,
              "place": {"type": "machine", "label": "machine", "key": "machine"}, "ident": {}, "original": "orig", "new": "new"})


@pytest.mark.parametrize("case", ["no study file", "not declared", "study changed"])
def test_a_command_knob_restore_runs_only_what_the_study_declares(tmp_path, case):
    setting, pwned = tmp_path / "setting", tmp_path / "PWNED"
    setting.write_text("new")
    f = study_file(tmp_path, setting)
    source = {"study_file": str(f), "study_digest": hashlib.sha256(f.read_text().encode()).hexdigest()}
    j = Journal()
    begin(j, **({} if case == "no study file" else source))
    if case == "study changed":  # the declared command, but the file the run read is no longer the same
        command_change(j, setting, None)  # type: ignore[arg-type]
        f.write_text(f.read_text() + "# edited\n")
    else:
        command_change(j, setting, f"touch {pwned}")
    r = restore()
    assert not pwned.exists() and setting.read_text() == "new", r.stdout
    why = {"no study file": "names no study file", "not declared": "does not declare command:f",
           "study changed": "changed since the run read it"}[case]
    assert r.returncode == 1 and why in r.stdout, r.stdout


def declared_session(tmp_path: Path) -> tuple[Path, Journal]:
    """A dead session that changed a command knob its study file declares, as a run writes it."""
    setting = tmp_path / "setting"
    setting.write_text("new")
    f = study_file(tmp_path, setting)
    j = Journal()
    begin(j, study_file=str(f), study_digest=hashlib.sha256(f.read_text().encode()).hexdigest())
    command_change(j, setting, None)  # type: ignore[arg-type]
    return setting, j


def test_a_command_knob_the_study_declares_is_restored(tmp_path):
    setting, _ = declared_session(tmp_path)
    r = restore()
    assert r.returncode == 0 and setting.read_text() == "orig", r.stdout + r.stderr


def test_sysctl_unsafe_is_restored_only_with_the_study_that_names_it(tmp_path):
    j = Journal()
    begin(j)
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    sysctl_change(j, "kernel.core_pattern", "|/tmp/pwn", NOT_CURRENT, kind="sysctl_unsafe")  # never the current value: harmless
    r = restore()
    assert r.returncode == 1 and "names no study file" in r.stdout
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before


@pytest.mark.parametrize("how", ["other owner", "group writable", "symlink"])
def test_a_journal_someone_else_could_write_is_refused(tmp_path, state_dir, how):
    if how == "other owner" and not IS_ROOT:
        pytest.skip("needs root to give the journal to another user")
    victim = tmp_path / "victim"
    victim.write_text("KEEP")
    j = Journal()
    begin(j)
    sysctl_change(j, "net.core.somaxconn", "1", NOT_CURRENT)  # never the current value: a restore would leave it
    if how == "other owner":
        os.chown(j.path, 65534, 65534)
    elif how == "group writable":
        j.path.chmod(0o664)
    else:
        real = tmp_path / "elsewhere.jsonl"
        j.path.rename(real)
        j.path.symlink_to(real)
    r = restore()
    err = r.stderr.strip()
    assert r.returncode != 0 and len(err.splitlines()) == 1, r.stdout + r.stderr
    want = {"other owner": "chown", "group writable": "chmod go-w", "symlink": "symbolic link"}[how]
    assert want in err and "Traceback" not in err
    with pytest.raises(NettuneError, match=want):
        Journal().open_sessions()


def edited_journal(tmp_path: Path, edit) -> tuple[Path, str]:
    """declared_session, then `edit` applied to the journal's lines."""
    setting, j = declared_session(tmp_path)
    lines = j.path.read_text().splitlines()
    j.path.write_text("\n".join(edit(lines)) + "\n")
    return setting, restore().stdout


def test_an_edited_record_is_detected_and_named(tmp_path):
    def edit(lines):
        rec = json.loads(lines[1])
        rec["original"] = "PWNED"
        return [lines[0], json.dumps(rec)]

    setting, out = edited_journal(tmp_path, edit)
    assert setting.read_text() == "new", out
    assert "record 1 (line 2)" in out and "does not match its checksum" in out


def test_a_record_cut_out_of_the_middle_is_detected(tmp_path):
    def edit(lines):
        rec = json.loads(lines[1])
        rec["seq"] = 2
        dup = dict(rec, n=2)  # a record that claims to come after one that is gone
        return [lines[0], json.dumps(dup)]

    setting, out = edited_journal(tmp_path, edit)
    assert setting.read_text() == "new", out
    assert "record 1 of the session are missing" in out or "records 1" in out, out


def test_a_record_without_a_checksum_is_not_acted_on(tmp_path):
    def edit(lines):
        rec = json.loads(lines[1])
        del rec["sum"], rec["n"]
        return [lines[0], json.dumps(rec)]

    setting, out = edited_journal(tmp_path, edit)
    assert setting.read_text() == "new" and "has no checksum" in out, out


def test_restore_first_and_lab_down_go_through_the_same_checks(tmp_path):
    from nettune.knobs.gate import journal_gate, settle_labs

    victim = tmp_path / "victim"
    victim.write_text("KEEP")
    j = Journal()
    begin(j)
    sysctl_change(j, traversal_to(victim), "PWNED", "KEEP")
    with pytest.raises(NettuneError, match="not acted on"):
        journal_gate(True, restore_first=True)
    assert victim.read_text() == "KEEP"

    ns = "nettune-tjt-a"
    j2 = Journal()
    begin(j2, sid="lab")
    sysctl_change(j2, traversal_to(victim), "PWNED", "KEEP", place={"type": "netns", "label": "a", "key": f"netns:{ns}", "netns": ns, "ino": 1},
                  sid="lab")
    out, given_up = settle_labs({ns}, [])
    assert victim.read_text() == "KEEP"
    assert any(result == "refused" for result, _ in out.lines)
    assert given_up and all("PWNED" not in cmd for _, cmd in given_up)


@pytest.mark.parametrize("kind, arg, device, original", [
    ("cmdline", "mitigations", None, {"family": "grub", "value": "off", "booted": "off", "files": {"/etc/passwd": "root::0:0::/:/bin/sh\n"}}),
    # the text restore would write does not hold the value the record says it held
    ("cmdline", "mitigations", None, {"family": "grub", "value": "off", "booted": "off", "files": {"/etc/default/grub": 'GRUB_CMDLINE_LINUX="init=/bin/sh"\n'}}),
    ("rps", None, "eth0", {"../../../../tmp/x": "1"}),
    ("irq_affinity", None, "eth0", {"../1": "0-3"}),
    ("cpufreq", "governor", None, {"cpu0/../../../../tmp/x": "performance"}),
    ("qdisc", None, "eth0", {"qdiscs": ["qdisc fq 1: root dev eth1"], "classes": []}),
    ("libvirt_queues", "vm1", None, {"queues": 1, "driver": "<driver queues='1'/><qemu:commandline>"}),
    ("pve_queues", "101", None, {"queues": 1, "line": "virtio=AA:BB:CC:DD:EE:FF,bridge=vmbr0\n--delete net0"}),
    ("mtu", None, "../lo", 1500),
    ("tuned", None, None, "--help"),
    ("sysctl_field", "kernel.core_pattern:1", None, "core"),
])
def test_each_kind_checks_its_own_paths_and_values_in_a_record(kind, arg, device, original):
    from nettune.knobs.base import Loc
    from nettune.knobs.journal_records import JournalChange, OpenSession
    from nettune.knobs.verify import Verifier

    new = {"cmdline": "off", "rps": "1", "irq_affinity": "0", "cpufreq": "powersave", "qdisc": "fq", "libvirt_queues": 2, "pve_queues": 2,
           "mtu": 9000, "tuned": "throughput-performance", "sysctl_field": "* 5"}[kind]
    key = f"{kind}{':' + arg if arg else ''}{'@' + device if device else ''}"
    ch = JournalChange("s", 1, "s", "h", Loc(key, kind, arg, device), {"type": "machine", "key": "machine"}, original, new)
    assert Verifier().check(ch, OpenSession("s")) is not None
