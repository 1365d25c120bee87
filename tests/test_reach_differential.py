"""Differential test of how nettune reaches hosts, with the real tools as the oracle: random
OpenSSH client configs (Host/Match blocks, Include, tokens, ProxyJump/ProxyCommand -W,
canonicalisation, key=value, comments, case) and random Ansible inventories (INI/YAML,
groups, children, ranges, host:port, group_vars/host_vars, ansible_* variables), built by
tests/reach_fuzz.py from seeds. Each is resolved by nettune and by the installed `ssh -G`
(for inventories: `ansible-inventory --list`, then `ssh -G` on the command line Ansible's
own ssh plugin builds), in the same private namespaces as tests/test_ssh_conformance.py,
and compared with its `compare` (every field nettune uses, each jump hop too). A refusal is
right only where ssh refuses or shows a directive nettune cannot honour.

NETTUNE_REACH_FUZZ=N runs N configs and N inventories (default 40 and 12, well under a
minute); NETTUNE_REACH_SEED=S starts at seed S (a failure names its seed and case)."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from reach_fuzz import ansible_case, ssh_case
from test_ssh_conformance import BIN, _members, compare, pytestmark, run_oracle  # noqa: F401 - the same skips

N = int(os.environ.get("NETTUNE_REACH_FUZZ", "0"))
SEED = int(os.environ.get("NETTUNE_REACH_SEED", "1000"))


def _truth(t: dict) -> dict:
    """A hop ssh cannot resolve (or a loop) makes the whole connection fail: nettune must refuse it."""
    failed = [h["error"] for h in t.get("jump", []) if "error" in h]
    return {"error": f"jump host: {failed[0]}"} if failed else t


def _refused_rightly(t: dict, n: dict) -> bool:
    """`ProxyJump none  # note`: ssh 9.2 jumps through a host named "none" (ssh -G: `proxyjump
    none`), which nettune refuses to guess at (ssh_resolve.py)."""
    return "'none' followed by a comment" in n.get("refused", "") and any(
        h.get("proxyjump") == "none" or "error" in h for h in [t, *t.get("jump", [])])


def test_random_ssh_configs_resolve_as_ssh_g_says(tmp_path):
    cases = tmp_path / "cases"
    for seed in range(SEED, SEED + (N or 40)):
        ssh_case(seed, cases / f"seed{seed}")
    res = run_oracle(tmp_path, None, 0, "ssh-cases", str(cases))
    bad = []
    for case, hosts in res.items():
        for h, r in hosts.items():
            if _refused_rightly(r["truth"], r["nettune"]):
                continue
            for m in compare(_truth(r["truth"]), r["nettune"], f"{case}: {h}"):
                bad.append(m + "\n    config:\n      " + (cases / case / "config").read_text().replace("\n", "\n      "))
    assert not bad, "\n".join(bad[:20]) + f"\n({len(bad)} mismatches)"


@pytest.mark.skipif(not shutil.which("ansible-inventory", path=f"{BIN}:{os.environ.get('PATH', '')}"), reason="ansible-core (test extra) is not installed")
def test_random_ansible_inventories_resolve_as_ansible_and_ssh_say(tmp_path):
    from nettune.studyfile.ansible_listing import static_list

    paths = [ansible_case(seed, tmp_path / "inv" / f"seed{seed}") for seed in range(SEED, SEED + (N or 12))]
    res = run_oracle(tmp_path, None, 1, "ansible-cases", *map(str, paths))
    bad = []
    for path in paths:
        where = f"{path.parent.name} ({path.name})"
        r = res[str(path)]
        if "error" in r:  # Ansible refuses it: so must nettune's own reader
            try:
                static_list(path)
                bad.append(f"{where}: ansible-inventory refuses ({r['error'].strip().splitlines()[-1]}) but nettune's reader read it")
            except ValueError:
                pass
            continue
        for host, hr in r["hosts"].items():
            if not hr.get("left_out") and not _refused_rightly(hr["truth"], hr["nettune"]):
                bad += compare(_truth(hr["truth"]), hr["nettune"], f"{where}: {host}")
                if "fields" in hr["nettune"]:
                    # becoming another user than root is noted as not honoured (docs/targets.md), not sudo
                    become = str(hr["become"]).lower() in ("true", "yes", "1", "on") and hr.get("become_user") in (None, "root")
                    if hr["nettune"]["fields"].get("sudo", False) != become:
                        bad.append(f"{where}: {host}: become {hr['become']!r} but nettune sudo {hr['nettune']['fields'].get('sudo')}")
        try:
            ours = json.loads(json.dumps(static_list(path), default=str))
        except ValueError as e:
            bad.append(f"{where}: nettune's reader refuses what ansible-inventory reads: {e}")
            continue
        for host, hv in r["listing"]["_meta"]["hostvars"].items():
            mine = ours["_meta"]["hostvars"].get(host)
            if mine != hv:
                diff = sorted(k for k in set(hv) | set(mine or {}) if hv.get(k) != (mine or {}).get(k))
                bad.append(f"{where}: {host}: vars differ in {[(k, (mine or {}).get(k), hv.get(k)) for k in diff[:6]]} (nettune, ansible)")
        extra = set(ours["_meta"]["hostvars"]) - set(r["listing"]["_meta"]["hostvars"]) - set(_members(r["listing"], "all"))
        if extra:
            bad.append(f"{where}: hosts only nettune's reader sees: {sorted(extra)}")
        for g in r["groups"]:
            want = sorted(_members(r["listing"], g))
            got = sorted(_members(ours, g))
            if want != got:
                bad.append(f"{where}: group {g}: nettune {got}, ansible-inventory {want}")
    if bad:
        files = {p.parent.name: {str(f.relative_to(p.parent)): f.read_text() for f in p.parent.rglob("*") if f.is_file()} for p in paths}
        shown = {w.split(" ")[0] for w in bad}
        pytest.fail("\n".join(bad[:20]) + f"\n({len(bad)} mismatches)\n" + json.dumps({k: v for k, v in files.items() if k in shown}, indent=1)[:6000])
