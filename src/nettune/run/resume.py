"""Continue a study a crash interrupted, and clear what a killed run left behind.

`nettune run FILE --resume` picks the latest study of the file's name that did not end
(status `interrupted` or `failed`, or `running` while the process that ran it is gone:
its owner token, pid and kernel start time, no longer matches a live process), checks the
file's text is the same (SHA-256 stored with the study), and runs into the same study id
only the tests it does not hold yet:

    a slot (point, run number, warm-up flag) already stored is skipped;
    with `[workload] pairs`, the pairs stored for a slot are skipped, the others run;
    adaptive repeats continue from the counted values stored.

Before any test (a resumed or a new run of the same name) the dead run's leftovers on
this machine go: its lab (namespaces, with the processes in them, bridge, veths) and the
processes it recorded, only when that run's owner is dead, by PID and start time.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from ..engines.result import TestResult
from ..errors import NettuneError
from ..plan.points import Slot
from ..store.base import ResultStore
from ..store.schema import spec_hash
from ..studyfile.models import Study
from ..targets import target_kind
from ..targets.procs import local_token, owner_machine, owner_state, stop_dead_runs

UNFINISHED = ("running", "interrupted", "failed")
SINGLE = ""  # the pair label of a slot that is one test, not a set of host pairs


def _pid(owner: str | None) -> str:
    return (owner or "?").split()[0]


def runner_alive(row: dict[str, Any]) -> bool:
    """Is the process that ran this study still running it? (Run on another machine: it
    may be, and only that machine can tell.)"""
    return row["status"] == "running" and bool(row.get("owner")) and owner_state(row["owner"]) != "dead"


def find_interrupted(store: ResultStore, study: Study, spec_text: str | None, file: str) -> dict[str, Any]:
    """The study `--resume` continues; a NettuneError saying why when there is none."""
    rows = store.named(study.name)
    if not rows:
        raise NettuneError(f"{store.where}: no study named {study.name!r} to resume; run without --resume to start it")
    live = next((r for r in rows if runner_alive(r)), None)
    if live is not None and owner_state(live["owner"]) == "elsewhere":
        raise NettuneError(
            f"study {study.name!r} (#{live['id']}) is running on {owner_machine(live['owner'])} (pid {_pid(live['owner'])}), or was "
            f"killed there: only that machine can tell; --resume it there"
        )
    if live is not None:
        raise NettuneError(
            f"study {study.name!r} (#{live['id']}) is still running (pid {_pid(live['owner'])}); --resume only continues a run "
            "that has ended: wait for it, or stop it first (Ctrl-C in its terminal)"
        )
    row = next((r for r in rows if r["status"] in UNFINISHED), None)
    if row is None:
        raise NettuneError(
            f"{store.where}: no interrupted study named {study.name!r} (the latest, #{rows[0]['id']}, is {rows[0]['status']}); "
            "run without --resume to start a new study"
        )
    if row["spec_hash"] != spec_hash(spec_text, study.model_dump_json()):
        raise NettuneError(
            f"{file} changed since study {study.name!r} (#{row['id']}) was started ({what_changed(row['spec_text'], spec_text)}); "
            "--resume needs the same file: put it back, or run without --resume to start a new study"
        )
    return row


def what_changed(old: str | None, new: str | None) -> str:
    """The first differing line of two versions of a study file, and how many differ."""
    if old is None or new is None:
        return "the study was run without its file text" if old is None else "the study was stored with its file text"
    a, b = old.splitlines(), new.splitlines()
    ops = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not ops:
        return "only whitespace at line ends or the final newline differs"
    tag, i1, i2, j1, j2 = ops[0]
    if tag == "replace":
        first = f"line {j1 + 1}: {a[i1].strip()!r} is now {b[j1].strip()!r}"
    elif tag == "delete":
        first = f"line {i1 + 1} {a[i1].strip()!r} was removed"
    else:
        first = f"line {j1 + 1} {b[j1].strip()!r} was added"
    n = sum(max(i2 - i1, j2 - j1) for _, i1, i2, j1, j2 in ops)
    return first + (f"; {n} lines differ" if n > 1 else "")


def stored_result(row: dict[str, Any]) -> TestResult:
    """A stored test, with what the adaptive stopping rule reads (ok, its primary metric: throughput or a command's wall seconds, pair):
    its stored `extra` JSON gives back the typed parts (record/legacy.py)."""
    return TestResult.model_validate({"engine": row["engine"], "ok": row["ok"], "duration": row["duration"], "receiver_bps": row["receiver_bps"],
                                      "reverse_receiver_bps": row["reverse_receiver_bps"], "extra": row["extra"]})


@dataclass
class Stored:
    """The tests a study already holds, by slot (point index, run, warm-up) and pair."""

    by_slot: dict[tuple[int, int, bool], dict[str, TestResult]] = field(default_factory=dict)

    @classmethod
    def load(cls, store: ResultStore, study_id: int) -> "Stored":
        out = cls()
        for row in store.stored_slots(study_id):
            key = (row["point_idx"], row["run"], row["warmup"])
            res = stored_result(row)
            out.by_slot.setdefault(key, {})[res.pair.pair if res.pair is not None and res.pair.pair else SINGLE] = res
        return out

    def of(self, slot: Slot) -> dict[str, TestResult]:
        """Stored results of a slot: pair label ("a->b", or "" for a single test) -> result."""
        return self.by_slot.get((slot.point.index, slot.run, slot.warmup), {})

    def count(self) -> int:
        return sum(len(v) for v in self.by_slot.values())


def dead_owners(store: ResultStore, name: str) -> set[str]:
    """Owner tokens of this name's studies whose runner was killed (still `running`, owner gone)."""
    return {local_token(r["owner"]) for r in store.named(name)
            if r["status"] == "running" and r.get("owner") and owner_state(r["owner"]) == "dead"}


def clear_dead_run(study: Study, owners: set[str]) -> list[str]:
    """Before a run of `study`: remove what killed runs of the same name left on this
    machine: the lab (as its state file records it, if its owner is gone; a lab still
    owned by a live run is refused), a knob-check namespace of `owners`, and before
    those the processes of every killed nettune run (targets/procs.py stop_dead_runs).
    Returns what was done, for the log."""
    notes = []
    # first: every killed run's processes (of this study or another), found by PID record or
    # owner mark; they hold ports and sit in the namespaces removed next
    stopped = stop_dead_runs()
    if stopped:
        notes.append(f"stopped {len(stopped)} process(es) that killed runs left: pid {', '.join(map(str, stopped))}")
    removed = target_kind(study).clear_dead(study, owners)  # e.g. the lab and its knob-check namespace
    if removed:
        notes.append(f"removed what a killed run of {study.name!r} left: {', '.join(removed)}")
    return notes
