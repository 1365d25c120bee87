"""Fuzz (hypothesis) over journal records and study values (issue 33): whatever a journal
holds, `nettune restore` writes only inside the journal's own directory and the places
the records may name, and runs no command the study file did not declare; whatever a
study file's values are, the dry run writes nothing and runs nothing but the tools'
read-only probes of this machine (the tools' versions, its CPU count).

What is watched: every file opened for writing, every file removed, renamed or made, and
every process started, through Python's audit hooks (sys.addaudithook: "open", "os.*",
"shutil.rmtree", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.system"), in this
process, where restore and the dry run run. Places: the records name the sandbox test
seam's host (its /proc/sys and /sys are a directory tree; targets/sandbox.py), a namespace
by any name, or, for command knobs only, this machine (where their commands really run:
the fuzzed ones only touch a marker file in /tmp). A fuzzed record of another kind never
names this machine, so it can never change it even if a check were wrong (the verifier's
refusal of such records is tests/test_journal_trust.py's).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import textwrap
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as tally
from hypothesis import strategies as st

from nettune.errors import NettuneError
from nettune.knobs.journal import Journal
from nettune.knobs.registry import KINDS
from nettune.knobs.restore import forget, restore_pending
from nettune.targets.sandbox import seed_tree

_EVENTS: list[tuple[str, tuple[Any, ...]]] | None = None  # recording while a list


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if _EVENTS is not None and (event in ("open", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.system", "shutil.rmtree")
                                or event.startswith(("os.remove", "os.rename", "os.replace", "os.mkdir", "os.symlink", "os.rmdir", "os.unlink"))):
        _EVENTS.append((event, args))


sys.addaudithook(_hook)  # cannot be removed: it records only inside watched()


@contextmanager
def watched() -> Iterator[list[tuple[str, tuple[Any, ...]]]]:
    global _EVENTS
    events: list[tuple[str, tuple[Any, ...]]] = []
    _EVENTS = events
    try:
        yield events
    finally:
        _EVENTS = None


def writes(events: list[tuple[str, tuple[Any, ...]]]) -> list[str]:
    """Paths opened for writing, or removed, renamed or made."""
    out = []
    for event, args in events:
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int) or path is None:
                continue
            if (mode and any(c in str(mode) for c in "wax+")) or (flags or 0) & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC):
                out.append(os.fsdecode(path))
        elif event.startswith(("os.", "shutil.")) and event not in ("os.exec", "os.posix_spawn", "os.system"):
            out += [os.fsdecode(a) for a in args[:2] if isinstance(a, (str, bytes, os.PathLike))]
    return [p for p in out if "__pycache__" not in p and p != os.devnull]  # subprocess opens /dev/null for stdin


def spawned(events: list[tuple[str, tuple[Any, ...]]]) -> list[list[str]]:
    out = []
    for event, args in events:
        if event == "subprocess.Popen":
            argv = args[1]
            out.append([os.fsdecode(a) for a in (argv if isinstance(argv, (list, tuple)) else [argv])])
        elif event in ("os.exec", "os.posix_spawn"):
            out.append([os.fsdecode(a) for a in args[1]])
        elif event == "os.system":
            out.append(["sh", "-c", os.fsdecode(args[0])])
    return out


def inside(path: str, *roots: Path) -> bool:
    real = os.path.realpath(path)
    return any(real == str(r) or real.startswith(str(r) + os.sep) for r in roots)


# -- journal records -------------------------------------------------------------------

NASTY = ["../../tmp/x", "kernel//core_pattern", "kernel/./core_pattern", "kernel.core_pattern", "-rf", "a\nb", ".", "..", "x/../../etc",
         "net.core.rmem_max", "net.core.somaxconn", "rx-0", "0", "cpu0/../x", "eth0", "lo", "vm1", "101/net0", "f", "",
         "net/ipv4/conf/eth0.100/forwarding", "$(touch /tmp/nettune-fuzz-pwned)", "`id`", "; rm -rf /"]
texts = st.one_of(st.sampled_from(NASTY), st.text(max_size=24))
scalars = st.one_of(texts, st.integers(-5, 1 << 20), st.booleans(), st.none())
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)), max_leaves=6)
commands = st.one_of(st.sampled_from([["true"], ["sh", "-c", "touch /tmp/nettune-fuzz-pwned"], "touch /tmp/nettune-fuzz-pwned", ["cat", "/etc/shadow"]]),
                     st.lists(texts, min_size=1, max_size=3), texts)


@st.composite
def records(draw, tree: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(sorted(KINDS) + ["nope"]))
    arg = draw(st.one_of(st.none(), texts))
    device = draw(st.one_of(st.none(), texts))
    loc: dict[str, Any] = {"key": draw(texts), "kind": kind, "arg": arg, "device": device}
    if kind == "command" or draw(st.booleans()):
        loc["spec"] = {"read": draw(commands), "apply": draw(commands), "restore": draw(st.one_of(st.none(), commands)), "scope": "host"}
    places = [
        {"type": "remote", "label": "h", "key": "remote:h", "reach": {"sandbox": tree, "address": "127.0.0.1"}},
        {"type": "netns", "label": "h", "key": "netns:x", "netns": draw(texts), "ino": draw(st.one_of(st.none(), st.integers(0, 10)))},
        {"type": draw(texts), "label": "h"},
    ]
    if kind == "command":  # this machine runs a command knob's commands for real: a fuzzed one must never run
        places.append(MACHINE)
    place = draw(st.sampled_from(places))
    rec = {"op": "change", "seq": 1, "study": "fz", "host": draw(texts), "knob": loc["key"], "loc": loc, "place": place,
           "ident": draw(st.one_of(st.just({}), st.dictionaries(texts, scalars, max_size=2))), "original": draw(values), "new": draw(values)}
    for k in draw(st.lists(st.sampled_from(list(rec)), max_size=2)):  # a field missing or of another type
        rec[k] = draw(values)
    return rec


MACHINE = {"type": "machine", "label": "machine", "key": "machine"}


@st.composite
def plausible(draw, tree: str, setting: str) -> dict[str, Any]:
    """A record as a run writes it (so restore acts on it), with fuzzed values: a sysctl of
    the sandbox host whose `new` is what its tree holds, or the study's own command knob on
    this machine (its commands really run: cat of a file of this test, true)."""
    place = {"type": "remote", "label": "h", "key": "remote:h", "reach": {"sandbox": tree, "address": "127.0.0.1"}}
    if draw(st.booleans()):
        name = draw(st.sampled_from(["net.core.rmem_max", "net.core.somaxconn"]))
        current = " ".join((Path(tree) / "proc/sys" / name.replace(".", "/")).read_text().split())
        loc = {"key": f"sysctl:{name}", "kind": "sysctl", "arg": name, "device": None}
        return {"op": "change", "seq": 1, "study": "fz", "host": "h", "knob": loc["key"], "loc": loc, "place": place, "ident": {},
                "original": draw(values), "new": current}
    spec = {"read": ["cat", setting], "apply": ["true"], "restore": None, "scope": "host"}
    loc = {"key": "command:f", "kind": "command", "arg": "f", "device": None, "spec": spec}
    return {"op": "change", "seq": 1, "study": "fz", "host": "h", "knob": "command:f", "loc": loc, "place": draw(st.sampled_from([place, MACHINE])),
            "ident": {}, "original": draw(values), "new": "a"}


def declared_study(d: Path, setting: Path) -> tuple[Path, str]:
    f = d / "s.toml"
    f.write_text(textwrap.dedent(f"""
        name = "fz"
        [target]
        kind = "local"
        [workload]
        duration = 1
        [knobs]
        "command:f" = {{value = "a", read = ["cat", "{setting}"], apply = ["true"]}}
        """))
    return f, hashlib.sha256(f.read_text().encode()).hexdigest()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_restore_writes_only_where_records_may_and_runs_only_declared_commands(data, monkeypatch):
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        tree = d / "tree"
        seed_tree(tree)
        setting = d / "setting"
        setting.write_text("a")
        study, digest = declared_study(d, setting)
        state = d / "state"
        monkeypatch.setenv("NETTUNE_STATE_DIR", str(state))
        monkeypatch.setenv("NETTUNE_RUN_DIR", str(d / "run"))
        monkeypatch.delenv("NETTUNE_SANDBOX", raising=False)
        j = Journal()
        j.append({"op": "begin", "session": "fz", "study": "fz", "pid": 999999999, "pid_start": "1", "time": 1.0,
                  "study_file": str(study), "study_digest": digest})
        recs = st.one_of(records(str(tree)), plausible(str(tree), str(setting)))
        for i, rec in enumerate(data.draw(st.lists(recs, min_size=1, max_size=4))):
            rec = dict(rec, session="fz", seq=i + 1)
            if data.draw(st.sampled_from([True, True, True, False])):
                j.append(rec)
            else:  # written by hand: no checksum
                with open(j.path, "a") as f:
                    f.write(json.dumps(rec, default=str) + "\n")
        declared = [["cat", str(setting)], ["true"]]
        with watched() as events:
            try:
                restore_pending(j)
                forget(j)
            except NettuneError:
                pass  # a refusal in one line is a right answer
        tally(f"processes started: {bool(spawned(events))}; tree written: {any(inside(p, tree) for p in writes(events))}")
        for path in writes(events):
            assert inside(path, state, tree), f"restore wrote {path}"
        for argv in spawned(events):
            ok = any(argv[:len(c)] == c for c in declared) or argv[0] in ("ls", "test", "uname", "nproc") \
                or (argv[0] == "cat" and all(inside(a, tree) for a in argv[1:]))
            assert ok, f"restore ran {argv}"
        assert not Path("/tmp/nettune-fuzz-pwned").exists()


# -- study values and the dry run ------------------------------------------------------

def toml(v: str) -> str:
    return json.dumps(v)  # a TOML basic string: JSON's escapes are TOML's


SYSCTLS = ["net.core.rmem_max", "kernel.core_pattern", "kernel//core_pattern", "kernel/./core_pattern", "../../tmp/x",
           "net/ipv4/tcp_rmem", "vm.mmap_min_addr", "kernel.yama.ptrace_scope", "net.ipv4.tcp_wmem"]
FRAGMENTS = ["echo {v}", "cat <<EOF\n{v}\nEOF", "true # {v}", "printf %s '{v}'", "x=$(({v}))", "echo \"{v}\"", "echo ok", "{v}"]


@st.composite
def study_texts(draw) -> str:
    value = draw(st.one_of(st.sampled_from(["$(touch /tmp/nettune-fuzz-pwned)", "`touch /tmp/nettune-fuzz-pwned`", "a\ntouch /tmp/nettune-fuzz-pwned",
                                            "'; touch /tmp/nettune-fuzz-pwned; '", "1"]), st.text(max_size=20)))
    text = 'name = "fzd"\n[target]\nkind = "local"\n'
    if draw(st.booleans()):
        run = "\n".join(draw(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=3)))
        text += f'[workload]\nengine = "command"\nrun = {toml(run)}\n'
    else:
        text += "[workload]\nduration = 1\n"
    text += f"[sweep]\nv = [{toml(value)}]\n[knobs]\n"
    for name in draw(st.lists(st.sampled_from(SYSCTLS), max_size=2, unique=True)):
        kind = draw(st.sampled_from(["sysctl", "sysctl_unsafe"]))
        text += f"{toml(kind + ':' + name)} = {toml(draw(st.sampled_from(['{v}', '4096', value])))}\n"
    if draw(st.booleans()):
        text += f'"command:c" = {{value = "{{v}}", read = {toml(draw(st.sampled_from(FRAGMENTS)))}, apply = ["true"]}}\n'
    return text


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(study_texts())
def test_the_dry_run_writes_nothing_and_runs_only_version_probes(text):
    from nettune.commands.dry_run import dry_run
    from nettune.plan.study_file import parse_study

    with watched() as events:
        try:
            dry_run(parse_study(text, "fz.toml"), text, "fz.toml")
        except NettuneError:
            pass  # refused in one line (a denied sysctl, a placeholder in a here-document, ...)
    assert writes(events) == []
    from nettune.engines import ENGINES

    probes = [e.version_argv() for e in ENGINES.values()]  # nettune's own, fixed: never a word of the study
    for argv in spawned(events):  # the probes of this machine a plan needs: the tools' versions, its CPU count
        tail = [os.path.basename(argv[0])] + argv[1:]  # run here as it is (no sudo, no namespace on a local target)
        assert any(tail == [os.path.basename(p[0])] + p[1:] for p in probes) \
            or os.path.basename(argv[0]) in ("nproc", "uname"), f"the dry run ran {argv}"
    assert not Path("/tmp/nettune-fuzz-pwned").exists()


@pytest.mark.parametrize("netns", ["../../proc/1/ns/net", "a/b", "..", "-x"])
def test_a_namespace_record_is_never_a_path(netns):
    from nettune.knobs.verify import check_place

    assert check_place({"type": "netns", "netns": netns}) is not None
