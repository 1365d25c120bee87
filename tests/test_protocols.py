"""Protocols are complete: no code asks an object what it can do at run time.

Every feature a caller uses is declared in its family's protocol with a default in the
family's base class (targets/base.py, engines/base.py, knobs/base.py, probes/base.py,
importers/base.py, exporters/base.py), so a
getattr(obj, "feature", ...) or hasattr(obj, "feature") in the packages below means a
feature missing from a protocol. All of src/nettune is checked; the few files that need
reflection for another reason are listed with that reason.
"""
from __future__ import annotations

import io
import tokenize
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "nettune"

# packages of src/nettune where no getattr/hasattr may appear ("" is all of src/nettune)
CHECKED = ("",)

# files allowed to use reflection, relative to src/nettune, with the reason
ALLOWED: dict[str, str] = {
    "studyfile/load.py": "pydantic model introspection (field names and aliases of the spec models), not a protocol",
    "__init__.py": "the package's lazy exports (module __getattr__ imports the module that holds a name)",
}

REFLECTION = ("getattr", "hasattr")


def reflective_calls(text: str) -> list[tuple[int, str]]:
    """(line, name) of every getattr(/hasattr( call in Python source; names in comments,
    strings and docstrings do not count (they are tokens of another kind)."""
    out: list[tuple[int, str]] = []
    toks = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)]
    for tok, nxt in zip(toks, toks[1:]):
        if tok.type == tokenize.NAME and tok.string in REFLECTION and nxt.string == "(":
            out.append((tok.start[0], tok.string))
    return out


def checked_files() -> list[Path]:
    files: list[Path] = []
    for pkg in CHECKED:
        files += sorted((SRC / pkg).rglob("*.py"))
    return [f for f in files if f.relative_to(SRC).as_posix() not in ALLOWED]


def test_no_feature_probing_in_checked_packages():
    found = [
        f"{f.relative_to(SRC).as_posix()}:{line}: {name}("
        for f in checked_files()
        for line, name in reflective_calls(f.read_text())
    ]
    assert not found, "declare the feature in the protocol (with a default in its base class) instead of:\n" + "\n".join(found)


def test_checked_packages_exist():
    # a renamed package must not silently drop out of the check
    for pkg in CHECKED:
        assert (SRC / pkg).is_dir(), pkg
    assert len(checked_files()) > 10
    for path in ALLOWED:
        assert (SRC / path).is_file(), path


def test_detector_sees_calls_not_words():
    src = 'x = getattr(o, "a", None)\n# hasattr(o, "b") in a comment\ny = "getattr(o)"\nz = hasattr (o, "c")\n'
    assert reflective_calls(src) == [(1, "getattr"), (4, "hasattr")]


def test_family_members_inherit_their_defaults():
    # a member that does not inherit its family's base class would lack a declared default
    from nettune.engines import ENGINES
    from nettune.engines.base import EngineBase
    from nettune.targets.base import HostBase, ProcBase, TargetBase
    from nettune.targets.lab.lab import LabHost, LabTarget
    from nettune.targets.local import LocalHost, LocalTarget
    from nettune.targets.procs import LocalProc
    from nettune.targets.ssh.ssh import SshHost, SshTarget
    from nettune.targets.ssh.sshproc import SshProc

    assert all(isinstance(e, EngineBase) for e in ENGINES.values())
    assert all(issubclass(h, HostBase) for h in (LabHost, LocalHost, SshHost))
    assert all(issubclass(p, ProcBase) for p in (LocalProc, SshProc))
    assert all(issubclass(t, TargetBase) for t in (LabTarget, LocalTarget, SshTarget))


def test_knob_probe_importer_and_exporter_members_inherit_their_defaults():
    import importlib

    from nettune.exporters.base import MEMBERS as EXPORTERS, ExporterBase, get_exporter
    from nettune.importers.base import MEMBERS as IMPORTERS, ImporterBase, importers
    from nettune.knobs.base import Kind
    from nettune.knobs.registry import KINDS
    from nettune.probes.base import ProbeBase
    from nettune.probes.cgroup_cpu import CgroupCpu
    from nettune.probes.power_command import PowerCommandProbe
    from nettune.probes.powercap import PowercapProbe
    from nettune.probes.registry import MACHINE_CPU
    from nettune.probes.process_cpu import ProcessCpu
    from nettune.probes.self_cpu import SelfCpu

    assert KINDS and all(isinstance(k, Kind) for k in KINDS.values())
    assert all(issubclass(p, ProbeBase) for p in (*MACHINE_CPU.values(), CgroupCpu, ProcessCpu, SelfCpu, PowercapProbe, PowerCommandProbe))
    assert [m.name for m in importers()] == list(IMPORTERS) and all(isinstance(m, ImporterBase) for m in importers())
    assert all(isinstance(get_exporter(n), ExporterBase) and get_exporter(n).name == n for n in EXPORTERS)
    # every probe file is a registered member (or the machine members' shared base)
    probes = Path(importlib.import_module("nettune.probes").__file__).parent
    members = {c.__module__.rsplit(".", 1)[1] for c in (*MACHINE_CPU.values(), CgroupCpu, ProcessCpu, SelfCpu, PowercapProbe, PowerCommandProbe)}
    assert {f.stem for f in probes.glob("*.py")} - members == {"__init__", "base", "registry", "machine_cpu"}


def test_every_declared_os_has_a_machine_cpu_probe():
    from nettune.probes.registry import MACHINE_CPU

    assert set(MACHINE_CPU) == {"linux", "freebsd"}  # Host.os: "linux" or "freebsd"


def test_workload_kinds_are_one_family_in_two_halves():
    # the study-file half and the run half of every kind, under one name; every engine a
    # study file may name selects exactly one kind
    from nettune.engines import ENGINES, NETWORK_ENGINES
    from nettune.engines.base import NetworkEngineBase
    from nettune.run.workloads import WORKLOADS
    from nettune.run.workloads.base import WorkloadRunBase
    from nettune.studyfile.models import WORKLOAD_KINDS, workload_kind
    from nettune.studyfile.workload_kind import WorkloadKindBase

    assert set(WORKLOAD_KINDS) == set(WORKLOADS) and {"network", "command"} <= set(WORKLOADS)
    assert all(isinstance(k, WorkloadKindBase) and k.name == n for n, k in WORKLOAD_KINDS.items())
    assert all(isinstance(k, WorkloadRunBase) and k.name == n for n, k in WORKLOADS.items())
    claimed = [e for k in WORKLOAD_KINDS.values() for e in k.engines]
    assert len(claimed) == len(set(claimed)) and set(ENGINES) | {"auto"} == set(claimed)
    assert {workload_kind(e).name for e in NETWORK_ENGINES} == {"network"} and workload_kind("command").name == "command"
    assert all(isinstance(e, NetworkEngineBase) for e in NETWORK_ENGINES.values())
    assert not isinstance(ENGINES["command"], NetworkEngineBase)  # no server, no client, nothing to parse


def test_target_kinds_answer_for_themselves():
    from nettune.studyfile.models import TARGET_KINDS
    from nettune.targets import TARGETS
    from nettune.targets.target_kind import TargetKindBase

    assert set(TARGETS) == set(TARGET_KINDS)
    assert all(isinstance(k, TargetKindBase) and k.name == n for n, k in TARGETS.items())
    # a journal's record of a host (Host.reach(), as each member writes it) is claimed by one kind only
    records = {
        "ssh": {"address": "198.18.7.1", "port": 22, "user": "root", "host_key": "ssh-ed25519 AAAA"},
        "kubernetes": {"kubernetes": True, "context": "c", "node": "n1", "namespace": "x", "pod": "p", "address": "n1", "port": 0},
        "local": {"sandbox": "/tmp/tree", "address": "127.0.0.1"},
    }
    for kind, rec in records.items():
        assert [n for n, k in TARGETS.items() if k.reaches(rec)] == [kind]
    assert not any(k.reaches({"address": "198.18.7.1"}) for k in TARGETS.values())  # an older journal: no way back
