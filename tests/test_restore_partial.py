"""A kill -9 in the middle of writing a value of several parts (one file per IRQ or per
queue) leaves it part original, part nettune's: restore must still put it back, and must
still leave a part someone else changed alone. No root: the sandbox host's tree."""
from __future__ import annotations

from nettune.knobs.base import Loc
from nettune.knobs.journal_records import JournalChange
from nettune.knobs.places import Place
from nettune.knobs.registry import KINDS
from nettune.knobs.restore import restore_changes
from nettune.targets.sandbox import SandboxHost, seed_tree


class Journal:
    """The journal's one call restore makes, recorded (the real one is tested in test_journal)."""

    def __init__(self) -> None:
        self.done_calls: list[tuple[int, str]] = []

    def done(self, session: str, seq: int, status: str, note: str = "") -> None:
        self.done_calls.append((seq, status))


def change(host: SandboxHost) -> tuple[Place, JournalChange]:
    loc = Loc("irq_affinity:38,39", "irq_affinity", "38,39")
    place = Place("a", "remote", host)
    rec = JournalChange("s", 1, "s", "a", loc, place.record(), {"38": "0-3", "39": "0-3"}, "0")
    rec.set_actual({"38": "0", "39": "0"})
    return place, rec


def irqs(host: SandboxHost) -> list[str]:
    return [host.read_text(f"/proc/irq/{n}/smp_affinity_list").strip() for n in (38, 39)]


def test_a_value_written_halfway_is_restored(tmp_path):
    seed_tree(tmp_path / "a")
    host = SandboxHost("a", tmp_path / "a")
    host.write_text("/proc/irq/38/smp_affinity_list", "0")  # killed before IRQ 39 was written
    place, rec = change(host)
    journal = Journal()
    out = restore_changes(journal, "s", [rec], lambda r: (place, ""))
    assert irqs(host) == ["0-3", "0-3"]
    assert journal.done_calls == [(1, "restored")] and out.failed == 0


def test_a_part_someone_else_changed_is_left(tmp_path):
    seed_tree(tmp_path / "a")
    host = SandboxHost("a", tmp_path / "a")
    host.write_text("/proc/irq/38/smp_affinity_list", "0")
    host.write_text("/proc/irq/39/smp_affinity_list", "2")  # neither the original nor nettune's
    place, rec = change(host)
    journal = Journal()
    restore_changes(journal, "s", [rec], lambda r: (place, ""))
    assert irqs(host) == ["0", "2"]
    assert journal.done_calls == [(1, "left")]


def test_per_queue_kinds_say_what_is_between():
    rps, irq = KINDS["rps"], KINDS["irq_affinity"]
    assert rps.between({"rx-0": "1", "rx-1": "0"}, {"rx-0": "0", "rx-1": "0"}, "1")
    assert not rps.between({"rx-0": "1", "rx-1": "3"}, {"rx-0": "0", "rx-1": "0"}, "1")
    assert irq.between({"38": "0", "39": "0-3"}, "0-3", {"38": "0", "39": "0"})
    assert not KINDS["mtu"].between(1500, 9000, 1500)  # one part: same() says it all
