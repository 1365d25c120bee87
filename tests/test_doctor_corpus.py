"""`nettune doctor --from` on real captures of hosts with known network problems
(tests/fixtures/doctor/real/: sosreports from canonical/hotsos, node_exporter's fixtures,
outputs posted in public issues and a mailing list; SOURCES.md names each, EXPECTED.md
gives the expert's reasoning, expected.toml what it implies). Through the real CLI: the
JSON a user gets. No root, no network."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from nettune.doctor.shape import DoctorJson

from conftest import nettune

REAL = Path(__file__).parent / "fixtures" / "doctor" / "real"
CASES = tomllib.loads((REAL / "expected.toml").read_text())


def run(case: str) -> dict:
    iface = CASES[case].get("interface")
    r = nettune("doctor", "--from", str(REAL / case), "--format", "json", *(["--interface", iface] if iface else []))
    assert r.returncode in (0, 1), r.stdout + r.stderr
    out = json.loads(r.stdout)
    DoctorJson.model_validate(out)
    assert not out["errors"]
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_doctor_concludes_what_the_expert_concludes(case):
    want = CASES[case]
    out = run(case)
    found = out["findings"]
    assert out["input"].startswith("sosreport ")
    for e in want["expect"]:
        hits = [f for f in found if f["check"] == e["check"] and e["seen"] in f["seen"]]
        assert hits, f"{case}: no {e['check']} finding with {e['seen']!r}; found: {[(f['severity'], f['seen']) for f in found if f['check'] == e['check']]}"
        assert any(f["severity"] == e["severity"] for f in hits), f"{case}: {e['check']} {e['seen']!r} at {[f['severity'] for f in hits]}, the expert says {e['severity']}"
        if "fix" in e:
            assert any(e["fix"] in f["fix"] for f in hits), f"{case}: {e['check']}: fix {[f['fix'] for f in hits]} lacks {e['fix']!r}"
    for m in want["must_not"]:
        bad = [f for f in found if f["check"] == m["check"] and m.get("seen", "") in f["seen"]
               and (m.get("at_all") or f["severity"] in ("warn", "problem"))]
        assert not bad, f"{case}: flagged what the expert says is fine: {[(f['severity'], f['seen']) for f in bad]}"
    for check in want["cannot_tell"]:
        said = [f for f in found if f["check"] == check and f["severity"] == "cannot_tell"]
        assert said, f"{case}: {check} should say cannot tell; it said {[(f['severity'], f['seen']) for f in found if f['check'] == check]}"
        assert all(f["evidence"].startswith("missing: ") and f["fix"] for f in said), said
    alarms = [f for f in found if f["severity"] in ("warn", "problem")]
    expected = [(e["check"], e["seen"]) for e in want["expect"] if e["severity"] in ("warn", "problem")]
    extra = [(f["check"], f["seen"]) for f in alarms if not any(c == f["check"] and s in f["seen"] for c, s in expected)]
    assert not extra, f"{case}: alarms no expert raised: {extra}"
    # every finding names the input it came from (a cannot_tell names what was missing instead)
    assert all(f["inputs"] for f in found if f["severity"] != "cannot_tell"), [f["check"] for f in found if not f["inputs"] and f["severity"] != "cannot_tell"]


def test_every_case_has_its_reasoning_and_source():
    expected, sources = (REAL / "EXPECTED.md").read_text(), (REAL / "SOURCES.md").read_text()
    for case in CASES:
        assert f"## {case}" in expected and f"`{case}/`" in sources, case
    assert len(CASES) >= 6


def test_a_sosreport_tarball_reads_as_its_directory(tmp_path):
    """sos writes sosreport-HOST-DATE.tar.xz with one top directory: the same findings as
    the unpacked directory (symbolic links such as proc/net -> self/net included)."""
    import tarfile

    t = tmp_path / "sosreport-juju-k8s-2022.tar.xz"
    with tarfile.open(t, "w:xz") as tar:
        tar.add(REAL / "hotsos-k8s-worker", arcname="sosreport-juju-k8s-2022")
    r = nettune("doctor", "--from", str(t), "--format", "json")
    from_tar = json.loads(r.stdout)
    from_dir = run("hotsos-k8s-worker")
    key = lambda f: (f["check"], f["severity"], f["seen"], f["evidence"])  # noqa: E731
    assert sorted(map(key, from_tar["findings"])) == sorted(map(key, from_dir["findings"]))
    assert from_tar["hosts"] == ["juju-110cc2-k8stest-4"]
