"""The truth for tests/test_ssh_conformance.py: what the installed `ssh -G` (and Ansible's own
ssh connection plugin, for inventories) says, next to what nettune resolves, for every host
of one corpus item. Run by the test as a child process inside a private mount and network
namespace (`unshare --mount --net`) whose /root (the passwd home ssh takes `~` from) is a
scratch directory holding the item's files as ~/.ssh, and whose $SHELL is a stub, so a
`Match exec` never runs its command and `ssh -G` never reaches anything. Prints JSON.

    python reach_oracle.py ssh HOST...             # ~/.ssh/config of the scratch home
    python reach_oracle.py ansible INVENTORY       # every host of an Ansible inventory
"""
from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
from typing import Any

HOME = os.path.expanduser("~")


def ssh_g(args: list[str]) -> dict[str, Any]:
    r = subprocess.run(["ssh", "-G", *args], capture_output=True, text=True, errors="replace", stdin=subprocess.DEVNULL, timeout=60)
    if r.returncode != 0:
        return {"error": " ".join(r.stderr.split())}
    out: dict[str, Any] = {}
    for line in r.stdout.splitlines():
        k, _, v = line.partition(" ")
        if k in ("identityfile", "certificatefile"):
            out.setdefault(k, []).append(v)
        else:
            out.setdefault(k, v)
    return out


def expand(path: str, g: dict[str, Any], original: str) -> str:
    """~ and the common %-tokens, as ssh expands a file name when it uses it."""
    if path.startswith("~/"):
        path = HOME + path[1:]
    tokens = {"d": HOME, "u": "root", "h": g.get("hostname", ""), "r": g.get("user", ""), "p": g.get("port", ""),
              "n": original, "i": str(os.getuid()), "%": "%", "l": socket.gethostname(), "L": socket.gethostname().split(".")[0]}
    tokens["C"] = g.get("_C", "%C")  # ssh's own %C (truth(): ControlPath=%C, which ssh -G prints expanded)
    tokens["k"] = g.get("hostkeyalias") or original  # ssh.c: HostKeyAlias, else the destination as typed
    path = re.sub(r"\$\{(\w+)\}", lambda m: os.environ.get(m.group(1), m.group(0)), path)
    return re.sub(r"%(.)", lambda m: tokens.get(m.group(1), m.group(0)), path)


def truth(args: list[str], dest: str, depth: int = 0) -> dict[str, Any]:
    """ssh -G for one destination, plus its jump hosts resolved as ssh resolves them."""
    if depth > 8:  # ssh would start ssh processes without end
        return {"error": "a jump host loop: more than 8 jump hosts deep"}
    g = ssh_g([*args, dest])
    if "error" in g:
        return g
    if any("%C" in f for f in g.get("identityfile", [])):
        g["_C"] = ssh_g(["-o", "ControlPath=%C", *args, dest]).get("controlpath", "%C")
    t = {"hostname": g["hostname"], "user": g["user"], "port": int(g["port"]),
         "identityfile": [expand(f, g, dest) for f in g.get("identityfile", [])],
         "knownhosts": [f for f in g.get("userknownhostsfile", "").split() if f.lower() != "none"]  # ssh -G shows them expanded
         + [expand(f, g, dest) for f in g.get("globalknownhostsfile", "").split() if f.lower() != "none"],
         "strict": g.get("stricthostkeychecking"), "connecttimeout": g.get("connecttimeout"),
         "identitiesonly": g.get("identitiesonly"), "proxycommand": g.get("proxycommand"),
         "remotecommand": g.get("remotecommand"), "localcommand": g.get("localcommand"),
         "permitlocalcommand": g.get("permitlocalcommand"), "pubkeyauthentication": g.get("pubkeyauthentication"),
         "identityagent": g.get("identityagent"), "certificatefile": g.get("certificatefile"),
         "hostkeyalias": g.get("hostkeyalias"), "proxyjump": g.get("proxyjump"), "jump": []}
    t["identity_existing"] = [f for f in t["identityfile"] if os.path.isfile(f)]
    if g.get("proxyjump"):  # ssh runs `ssh [-l u] [-p p] [-J earlier,hops] -W %h:%p LAST`
        hops = g["proxyjump"].split(",")
        m = re.fullmatch(r"(?:ssh://)?(?:(.*)@)?(\[[^\]]*\]|[^:]*)(?::(\d+))?", hops[-1])
        user, host, port = m.group(1), m.group(2).strip("[]"), m.group(3)
        sub = (["-l", user] if user else []) + (["-p", port] if port else []) + (["-J", ",".join(hops[:-1])] if hops[:-1] else [])
        hop = truth(sub, host, depth + 1)
        t["jump"] = hop.pop("jump", []) + [{"name": host, **hop}] if "error" not in hop else [{"name": host, **hop}]
    elif g.get("proxycommand", "").split()[:1] in (["ssh"], ["exec"]) and "-W" in g["proxycommand"].split():
        words = shlex.split(g["proxycommand"].replace("%h", g["hostname"]).replace("%p", g["port"]).replace("%r", g["user"]))
        words = words[:next((i for i, w in enumerate(words) if w.startswith("#")), len(words))]  # sh: a comment (no quoted # here)
        words = words[1:] if words[0] == "exec" else words
        i = words.index("-W")
        forward, rest = words[i + 1], words[1:i] + words[i + 2:]
        if forward in (f"{g['hostname']}:{g['port']}", f"[{g['hostname']}]:{g['port']}"):
            inner = truth(rest[:-1], rest[-1], depth + 1)  # the inner ssh: its own config, its own args
            t["jump"] = inner.pop("jump", []) + [{"name": rest[-1].rpartition("@")[2], **inner}] if "error" not in inner else [inner]
    return t


def ours(resolve_call: Any) -> dict[str, Any]:
    """nettune's fields, or its refusal and the fields it had computed before refusing
    (so the values are compared even where a directive is refused)."""
    from nettune.studyfile import ssh_config
    from nettune.studyfile.local_commands import allow_local_commands
    from nettune.studyfile.ssh_words import SshConfigError

    try:
        with allow_local_commands():
            return {"fields": resolve_call()}
    except (SshConfigError, ValueError) as e:
        refused = str(e)
    real, ssh_config._refuse = ssh_config._refuse, lambda r, where: None
    try:
        with allow_local_commands():
            return {"refused": refused, "unrefused": resolve_call()}
    except (SshConfigError, ValueError):
        return {"refused": refused}
    finally:
        ssh_config._refuse = real


def ssh_main(hosts: list[str]) -> dict[str, Any]:
    from nettune.studyfile.ssh_config import resolve

    return {h: {"truth": truth([], h), "nettune": ours(lambda h=h: resolve(h, None))} for h in hosts}


def ssh_cases(root: str) -> dict[str, Any]:
    """Each directory under root (tests/reach_fuzz.py) in turn as ~/.ssh: its hosts.json's hosts."""
    import shutil
    from pathlib import Path

    dot = Path(HOME) / ".ssh"
    out = {}
    for case in sorted(Path(root).iterdir()):
        shutil.rmtree(dot, ignore_errors=True)
        shutil.copytree(case, dot)
        for p in [dot, *dot.rglob("*")]:
            p.chmod(0o700 if p.is_dir() else 0o600 if "stand-in" in p.read_text(errors="replace") else 0o644)
        if (dot / "etc_hosts").exists():  # names and aliases to resolve, in this private mount namespace only
            subprocess.run(["mount", "--bind", str(dot / "etc_hosts"), "/etc/hosts"], check=True)
        hosts = json.loads((dot / "hosts.json").read_text())
        out[case.name] = ssh_main([h for h in hosts if isinstance(h, str)])
        for h, given in (h for h in hosts if not isinstance(h, str)):  # with a study's user/port/jump: ssh -l/-p/-J
            from nettune.studyfile.ssh_config import resolve

            args = [a for flag, k in (("-l", "user"), ("-p", "port"), ("-J", "jump")) if k in given for a in (flag, str(given[k]))]
            out[case.name][f"{h} {' '.join(args)}"] = {"truth": truth(args, h), "nettune": ours(lambda h=h, g=given: resolve(h, None, dict(g)))}
        if (dot / "etc_hosts").exists():
            subprocess.run(["umount", "/etc/hosts"], check=True)
    return out


def ansible_main(inventory: str, through_ansible_inventory: bool = True) -> dict[str, Any]:
    from ansible import constants as C
    from ansible.playbook.play_context import PlayContext
    from ansible.plugins.loader import connection_loader

    from nettune.studyfile.ansible_inventory import read_ansible, to_host
    from nettune.studyfile.ssh_config import resolve

    r = subprocess.run(["ansible-inventory", "-i", inventory, "--list"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        return {"error": r.stderr}
    listing = json.loads(r.stdout)
    listing["_meta"].pop("profile", None)
    hostvars = listing["_meta"]["hostvars"]
    from nettune.studyfile.ansible_inventory import members

    groups = {g: b for g, b in listing.items() if g != "_meta"}
    out: dict[str, Any] = {"listing": listing, "hosts": {}, "groups": {}}
    for host in members(groups, "all"):
        hv = hostvars.get(host, {})
        if str(hv.get("ansible_connection") or "ssh") not in ("ssh", "smart"):
            out["hosts"][host] = {"left_out": True}
            continue
        conn = connection_loader.get("ssh", PlayContext(), None)
        # the connection timeout reaches the plugin as the task keyword `timeout`, PlayContext's
        # first of MAGIC_VARIABLE_MAPPING['timeout'] (TaskExecutor._set_connection_options)
        timeout = next((hv[v] for v in C.MAGIC_VARIABLE_MAPPING["timeout"] if v in hv), C.DEFAULT_TIMEOUT)
        conn.set_options(task_keys={"timeout": timeout}, var_options={k: v for k, v in {**hv, "inventory_hostname": host}.items() if k in C.config.get_plugin_vars("connection", "ssh")})
        argv = [a.decode() for a in conn._build_command("ssh", "ssh")]
        # the plugin's `host` is ansible_host, else the template {{inventory_hostname}}, which Ansible fills with the name
        dest = conn.get_option("host")
        fields = to_host(host, hv, __import__("pathlib").Path(inventory))
        cl, nettune_dest = fields.pop("_ssh", (None, None))
        out["hosts"][host] = {"argv": argv, "dest": dest, "truth": truth(argv[1:], dest), "become": hv.get("ansible_become"), "become_user": hv.get("ansible_become_user"),
                              "nettune": ours(lambda: {**resolve(host, None, dict(fields), cl, nettune_dest), "dest": nettune_dest})}
    for reader_allowed in (True, False) if through_ansible_inventory else (False,):
        from nettune.studyfile.local_commands import allow_local_commands

        with allow_local_commands(reader_allowed):  # through ansible-inventory (a few groups: it is slow), and the static reader
            for g in (sorted(groups, key=lambda g: -len(members(groups, g)))[:6] if reader_allowed else groups):
                try:
                    got = sorted(read_ansible(__import__("pathlib").Path(inventory), g)[0])
                except ValueError as e:
                    got = f"refused: {e}"
                out["groups"].setdefault(g, {})["ansible-inventory" if reader_allowed else "static"] = got
    return out


if __name__ == "__main__":
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode == "ssh-cases":
        print(json.dumps(ssh_cases(rest[0]), default=str))
    elif mode == "ansible-cases":
        print(json.dumps({inv: ansible_main(inv, False) for inv in rest}, default=str))
    else:
        print(json.dumps(ssh_main(rest) if mode == "ssh" else ansible_main(rest[0]), default=str))
