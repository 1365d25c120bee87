"""Conformance with the real tools (issue 36): every host of 16 real OpenSSH client
configurations and 11 real Ansible inventories from public repositories
(tests/fixtures/ssh_config/real/SOURCES.md, tests/fixtures/ansible/real/SOURCES.md) is
resolved by nettune and by the installed OpenSSH (`ssh -G`, which prints what ssh would use
and never connects) — for inventories, `ssh -G` given the very command line Ansible's own ssh
connection plugin builds for the host, and `ansible-inventory --list` for groups. Compared
field by field: address, user, port, identity files and the key used, jump hosts (each hop
as ssh resolves it), known_hosts files, StrictHostKeyChecking, ConnectTimeout, agent use,
groups and become.

A refusal is right only where ssh refuses too, or where nettune cannot honour a directive
that `ssh -G` shows set (ProxyCommand other than `ssh -W %h:%p HOST`, StrictHostKeyChecking
no, RemoteCommand, ...). Equivalent forms: none left (ssh lowercases names and prints
addresses canonically, and so does nettune).

Each item runs in a private mount and network namespace whose /root (ssh takes `~` from the
passwd entry) holds the item as ~/.ssh, with $SHELL a stub: a `Match exec` runs nothing
(evaluated once as failing and once as succeeding), and nothing is reachable."""
from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import needs_root

FIX = Path(__file__).parent / "fixtures"
SSH_CORPUS = sorted(p for p in (FIX / "ssh_config" / "real").iterdir() if p.is_dir())
ANSIBLE_CORPUS = sorted(p for p in (FIX / "ansible" / "real").iterdir() if p.is_dir())
ORACLE = Path(__file__).parent / "reach_oracle.py"
BIN = Path(sys.executable).parent
pytestmark = [needs_root, pytest.mark.skipif(not (shutil.which("ssh") and shutil.which("unshare")), reason="needs OpenSSH's ssh and unshare")]

# nettune's one-line refusals of what it cannot honour, and what `ssh -G` must then show
CANNOT_HONOUR = {
    "nettune cannot honour ProxyCommand": lambda t: bool(t.get("proxycommand")),
    "StrictHostKeyChecking no": lambda t: t.get("strict") == "false",
    "nettune cannot honour RemoteCommand": lambda t: bool(t.get("remotecommand")),
    "LocalCommand with PermitLocalCommand": lambda t: bool(t.get("localcommand")) and t.get("permitlocalcommand") == "yes",
    "PubkeyAuthentication no": lambda t: t.get("pubkeyauthentication") == "false",
    "nettune cannot honour CertificateFile": lambda t: bool(t.get("certificatefile")),
    "nettune cannot honour HostKeyAlias": lambda t: bool(t.get("hostkeyalias")),
}


def hosts_of(ssh_dir: Path) -> list[str]:
    """Every name a config speaks of: literal Host/Match patterns, a sample name for each
    wildcard, one name it does not know, and a literal one in capitals (case matters)."""
    names: list[str] = []
    for f in sorted(ssh_dir.rglob("*")):
        if not f.is_file() or f.suffix == ".pub" or "known_hosts" in str(f):
            continue
        for line in f.read_text(errors="replace").splitlines():
            line = line.split("#")[0]
            m = re.match(r"\s*host(?:\s*=\s*|\s+)(.*)", line, re.I)
            pats = m.group(1).replace(",", " ").split() if m else []
            if re.match(r"\s*match\s", line, re.I):
                pats = [p for w in re.findall(r"(?i)(?:^|\s)!?(?:host|originalhost)\s+(\S+)", line) for p in w.strip('"').split(",")]
            names += [p.replace("*", "x1").replace("?", "q") for p in pats if not p.startswith("!")]
    names = list(dict.fromkeys(n for n in names if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", n)))  # names a study can hold
    literal = next((n for n in names if n.isascii() and n.lower() != n.upper()), None)
    return names + ["nettune-unlisted.example"] + ([literal.upper()] if literal else [])


def run_oracle(tmp_path: Path, ssh_dir: Path | None, exec_result: int, *args: str) -> dict[str, Any]:
    home = tmp_path / f"home{exec_result}"
    dot = home / ".ssh"
    if ssh_dir is not None:
        shutil.copytree(ssh_dir, dot)
    dot.mkdir(parents=True, exist_ok=True)
    for p in [dot, *dot.rglob("*")]:
        p.chmod(0o700 if p.is_dir() else 0o644)
    text = "\n".join(f.read_text(errors="replace") for f in dot.rglob("*") if f.is_file())
    keys = sorted(set(re.findall(r"(?i)^\s*IdentityFile\s*=?\s*~/\.ssh/(\S+)", text, re.M))) + ["id_ed25519", "id_rsa"]
    for i, k in enumerate(keys):  # every other key named (and two of ssh's defaults) exists: "which key is used"
        if i % 2 == 0 and not (dot / k).exists() and "/" not in k and not k.endswith(".pub"):
            (dot / k).write_text("a stand-in private key\n")
            (dot / k).chmod(0o600)
    stub = tmp_path / f"shell{exec_result}"
    stub.write_text(f"#!/bin/sh\nexit {exec_result}\n")
    stub.chmod(0o755)
    passwd_home = pwd.getpwuid(os.getuid()).pw_dir
    keep = ""  # the Python running the tests may live in that home (pyenv): keep it visible
    real = os.path.realpath(sys.executable)
    if real.startswith(passwd_home.rstrip("/") + "/"):
        top = real[len(passwd_home.rstrip("/")) + 1:].split("/")[0]
        (home / top).mkdir(exist_ok=True)
        keep = f'mount --bind "{passwd_home}/{top}" "$1/{top}" && '
    env = {"PATH": f"{BIN}:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": passwd_home, "SHELL": str(stub), "LANG": "C.UTF-8",
           "XDG_RUNTIME_DIR": f"/run/user/{os.getuid()}",  # set in a login session; configs use it
           "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp")}
    r = subprocess.run(["unshare", "--mount", "--net", "--propagation", "private", "sh", "-c",
                        f'{keep}mount --rbind "$1" "{passwd_home}" && shift && exec "$@"', "sh", str(home), sys.executable, str(ORACLE), *args],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def explain_refusal(refused: str, t: dict[str, Any]) -> str | None:
    """None when nettune's refusal is right for what ssh shows; else why not."""
    hops = [t] + [h for h in t.get("jump", []) if isinstance(h, dict)]
    for words, shown in CANNOT_HONOUR.items():
        if words in refused and any(shown(h) for h in hops):
            return None
    if "environment variable" in refused and any("${" in f for h in hops for f in h.get("identityfile", [])):
        return None  # ssh refuses it when it loads the key ("invalid environment variable expansion")
    return f"nettune refused what ssh accepts: {refused}"


def compare(t: dict[str, Any], n: dict[str, Any], where: str) -> list[str]:
    """Field by field; [] when equal."""
    if "error" in t:
        return [] if "refused" in n else [f"{where}: ssh refuses ({t['error']}) but nettune resolved it"]
    if "refused" in n:
        why = explain_refusal(n["refused"], t)
        if why or "unrefused" not in n:
            return [f"{where}: {why}"] if why else []
        n = {"fields": n["unrefused"]}  # refused rightly: the values it had resolved are compared too
    f = n["fields"]
    bad = []

    def eq(name: str, ours: Any, theirs: Any) -> None:
        if ours != theirs:
            bad.append(f"{where}: {name}: nettune {ours!r}, ssh {theirs!r}")

    eq("address", f["address"], t["hostname"])
    eq("user", f["user"], t["user"])
    eq("port", f["port"], t["port"])
    keys = ([f["key"]] if f.get("key") else []) + list(f.get("more_keys", []))
    # ssh offers the files present; none present: nothing from files (IdentitiesOnly: nettune keeps the
    # first one named, so that connecting says it is missing; ssh's own defaults are never "named")
    defaults = [p.split("/.ssh/")[-1] for p in t["identityfile"]] == ["id_rsa", "id_ecdsa", "id_ecdsa_sk", "id_ed25519", "id_ed25519_sk", "id_xmss", "id_dsa"]
    named_only = t["identityfile"][:1] if t["identitiesonly"] == "yes" and not defaults else []
    eq("identity files offered", keys, t["identity_existing"] or named_only)
    eq("known_hosts files", ([f["known_hosts"]] if f.get("known_hosts") else []) + list(f.get("more_known_hosts", [])), t["knownhosts"])
    tofu = {"accept-new": True, "true": False}.get(t["strict"])
    eq("StrictHostKeyChecking", f.get("trust_on_first_use"), tofu)
    eq("ConnectTimeout", f.get("connect_timeout"), None if t["connecttimeout"] in ("none", "0") else float(t["connecttimeout"]))
    eq("agent", f.get("agent"), t["identitiesonly"] != "yes" and (t.get("identityagent") or "").lower() != "none")
    hops = f.get("jump", [])
    eq("jump hosts", [(h["name"], h["address"], h["user"], h["port"]) for h in hops],
       [(h["name"], h.get("hostname"), h.get("user"), h.get("port")) for h in t.get("jump", [])])
    for i, (mine, theirs) in enumerate(zip(hops, t.get("jump", []))):
        if "error" not in theirs:
            bad += compare({**theirs, "jump": []}, {"fields": {**mine, "jump": []}}, f"{where} hop {i + 1}")
    return bad


@pytest.mark.parametrize("item", SSH_CORPUS, ids=[p.name for p in SSH_CORPUS])
def test_ssh_config_resolves_as_ssh_g_says(item, tmp_path):
    hosts = hosts_of(item)
    assert hosts
    results = [run_oracle(tmp_path, item, 1, "ssh", *hosts)]
    if "exec" in "".join(f.read_text(errors="replace") for f in item.rglob("*") if f.is_file()).lower():
        results.append(run_oracle(tmp_path, item, 0, "ssh", *hosts))  # Match exec succeeding
    bad = [m for res in results for h, r in res.items() for m in compare(r["truth"], r["nettune"], f"{item.name}: {h}")]
    assert not bad, "\n".join(bad)


@pytest.mark.skipif(not shutil.which("ansible-inventory", path=f"{BIN}:{os.environ.get('PATH', '')}"), reason="ansible-core (test extra) is not installed")
@pytest.mark.parametrize("item", ANSIBLE_CORPUS, ids=[p.name for p in ANSIBLE_CORPUS])
def test_ansible_inventory_resolves_as_ansible_and_ssh_say(item, tmp_path):
    files = [p for p in item.rglob("*") if p.is_file() and "group_vars" not in p.parts and "host_vars" not in p.parts]
    assert len(files) == 1, files
    res = run_oracle(tmp_path, None, 1, "ansible", str(files[0]))
    assert "error" not in res, res.get("error")
    bad = []
    for host, r in res["hosts"].items():
        if r.get("left_out"):
            continue
        bad += compare(r["truth"], r["nettune"], f"{item.name}: {host}")
        if "fields" in r["nettune"]:
            become = str(r["become"]).lower() in ("true", "yes", "1", "on")
            if r["nettune"]["fields"].get("sudo", False) != become:
                bad.append(f"{item.name}: {host}: become {r['become']!r} but nettune sudo {r['nettune']['fields'].get('sudo')}")
    # nettune's own reader (what a dry run uses) gives every variable ansible-inventory gives
    from nettune.studyfile.ansible_listing import static_list

    ours = json.loads(json.dumps(static_list(files[0]), default=str))["_meta"]["hostvars"]
    for host, hv in res["listing"]["_meta"]["hostvars"].items():
        if ours.get(host) != hv:
            diff = sorted(k for k in set(hv) | set(ours.get(host, {})) if hv.get(k) != ours.get(host, {}).get(k))
            bad.append(f"{item.name}: {host}: static reader differs from ansible-inventory in {diff[:8]}")
    left = {h for h, r in res["hosts"].items() if r.get("left_out")}
    for g, got in res["groups"].items():
        want = sorted(h for h in _members(res["listing"], g) if h not in left)
        for reader, hosts in got.items():
            if want and hosts != want:
                bad.append(f"{item.name}: group {g} ({reader}): nettune {hosts}, ansible-inventory {want}")
    assert not bad, "\n".join(bad)


def _members(listing: dict[str, Any], group: str, seen: set[str] | None = None) -> list[str]:
    seen = seen if seen is not None else set()
    if group in seen or group not in listing:
        return []
    seen.add(group)
    out = list(listing[group].get("hosts", []))
    for c in listing[group].get("children", []):
        out += [h for h in _members(listing, c, seen) if h not in out]
    return out
