"""Boot-time changes restored with one reboot per host (knobs/boot_batch.py), on the
temporary root trees of test_cmdline_knobs.py (real-format Debian /etc/default/grub, thin
fakes of update-grub and reboot): every change's configuration goes back first, the host
reboots once, /proc/cmdline is checked for each, and only then is each change journaled
as restored; a reboot that fails or a value that does not come back leaves it pending.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from nettune.knobs.journal import Journal
from nettune.knobs.journal_records import JournalChange
from nettune.knobs.places import Place
from nettune.knobs.restore import restore_changes
from nettune.targets import reboot as rb

from test_cmdline_knobs import KIND, LOC, RootHost, make_root, snapshot

NOSMT = LOC.__class__("cmdline:nosmt", "cmdline", "nosmt")
PLACE = {"type": "remote", "label": "vm1", "key": "remote:vm1"}


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch):
    monkeypatch.setattr(rb, "POLL", 0.05)


def reboots(h: RootHost) -> int:
    return sum(c == rb.REBOOT_ARGV for c in h.calls)


def changed(h: RootHost, j: Journal, sid: str, seq: int, loc, raw) -> JournalChange:
    """Apply as a run does: the value as the kind parses it ("auto", the kernel's default,
    is the parameter absent), journaled first, then made (one reboot), then read back."""
    value = KIND.parse(loc, raw)
    rec = j.change(sid, seq, "s", "vm1", loc.record(), PLACE, KIND.read(h, loc), value)
    KIND.apply(h, loc, value)
    rec.set_actual(KIND.read(h, loc))
    j.actual(sid, seq, rec.actual)
    return rec


def restore(h: RootHost, j: Journal, sid: str, recs: list[JournalChange]):
    return restore_changes(j, sid, recs, lambda _r: (Place("vm1", "remote", h), ""))


def pending(j: Journal) -> list[int]:
    return [c.seq for s in j.open_sessions() for c in s.changes]


@pytest.mark.parametrize("second", [NOSMT, LOC], ids=["two-keys", "one-key-twice"])
def test_changes_go_back_with_one_reboot(tmp_path, second):
    """Two keys changed at one point (mitigations=off, nosmt), or one key changed twice
    (off, then auto: back to no mitigations= at all, not through off)."""
    h = make_root(tmp_path, "debian")
    before, cmdline0 = snapshot(h), (h.root / "proc/cmdline").read_text()
    j = Journal(tmp_path / "journal.jsonl")
    sid = j.begin("s", None)
    recs = [changed(h, j, sid, 1, LOC, "off"), changed(h, j, sid, 2, second, True if second is NOSMT else "auto")]
    now = (h.root / "proc/cmdline").read_text()
    assert "mitigations=off nosmt" in now if second is NOSMT else "mitigations" not in now
    n = reboots(h)
    out = restore(h, j, sid, recs)
    # one reboot for both (it was one per change); off then auto is the original command line
    # again (auto is the parameter absent): nothing to boot back to
    assert reboots(h) - n == (1 if second is NOSMT else 0)
    assert [r for r, _t in out.lines] == ["restored", "restored"] and not out.failed and not out.warnings, out.lines
    assert snapshot(h) == before and (h.root / "proc/cmdline").read_text() == cmdline0
    assert pending(j) == []


def test_a_reboot_that_fails_leaves_every_change_pending_and_a_second_restore_ends_it(tmp_path):
    h = make_root(tmp_path, "debian")
    before, cmdline0 = snapshot(h), (h.root / "proc/cmdline").read_text()
    j = Journal(tmp_path / "journal.jsonl")
    sid = j.begin("s", None)
    recs = [changed(h, j, sid, 1, LOC, "off"), changed(h, j, sid, 2, NOSMT, True), changed(h, j, sid, 3, LOC, "auto")]
    real = (h.root / "bin/reboot").read_text()
    (h.root / "bin/reboot").write_text("#!/bin/sh\nexit 0\n")  # accepted, nothing happens
    h.reboot_timeout = 0.5
    out = restore(h, j, sid, recs)
    assert out.failed == 3 and sorted(out.failed_seqs) == [1, 2, 3] and pending(j) == [1, 2, 3]
    assert all(r == "failed" and "did not come back from a reboot" in t for r, t in out.lines)
    assert {k: v for k, v in snapshot(h).items() if k != "bin/reboot"} == {k: v for k, v in before.items() if k != "bin/reboot"}
    # the configuration is back; the kernel still runs nettune's values
    running = (h.root / "proc/cmdline").read_text()
    assert "nosmt" in running and "mitigations" not in running  # auto: the parameter absent

    (h.root / "bin/reboot").write_text(real)  # the host reboots again: `nettune restore` once more
    h.reboot_timeout = 20.0
    n = reboots(h)
    out = restore(h, j, sid, j.open_sessions()[0].changes)
    assert reboots(h) - n == 1 and not out.failed and [r for r, _t in out.lines] == ["restored"] * 3, out.lines
    assert snapshot(h) == before and (h.root / "proc/cmdline").read_text() == cmdline0
    assert pending(j) == []


def test_a_value_that_does_not_come_back_stays_pending_the_others_are_restored(tmp_path):
    h = make_root(tmp_path, "debian")
    j = Journal(tmp_path / "journal.jsonl")
    sid = j.begin("s", None)
    recs = [changed(h, j, sid, 1, LOC, "off"), changed(h, j, sid, 2, NOSMT, True)]
    # an override added meanwhile keeps mitigations=off on the kernel's line whatever /etc/default/grub says
    (h.root / "etc/default/grub.d").mkdir()
    (h.root / "etc/default/grub.d/50-cloudimg-settings.cfg").write_text('GRUB_CMDLINE_LINUX_DEFAULT="quiet splash mitigations=off"\n')
    n = reboots(h)
    out = restore(h, j, sid, recs)
    assert reboots(h) - n == 1
    assert pending(j) == [1] and out.failed_seqs == [1]
    by_key = {("mitigations" if "mitigations" in t.split(" ", 2)[1] else "nosmt"): r for r, t in out.lines}
    assert by_key == {"mitigations": "failed", "nosmt": "restored"}, out.lines
    assert any("after the reboot /proc/cmdline has mitigations=off, not no mitigations" in w for w in out.warnings), out.warnings
    assert "nosmt" not in (h.root / "proc/cmdline").read_text()


def test_one_change_alone_still_reboots_once_and_a_booted_original_needs_none(tmp_path):
    """The first case: a single change (and the kill between edit and reboot, test_cmdline_knobs)."""
    h = make_root(tmp_path, "debian")
    before = snapshot(h)
    j = Journal(tmp_path / "journal.jsonl")
    sid = j.begin("s", None)
    rec = changed(h, j, sid, 1, LOC, "off")
    n = reboots(h)
    assert [r for r, _t in restore(h, j, sid, [rec]).lines] == ["restored"]
    assert reboots(h) - n == 1 and snapshot(h) == before and pending(j) == []
    assert Path(h.root / "proc/cmdline").read_text().count("mitigations") == 0
