"""Random OpenSSH client configs and Ansible inventories mixing the features nettune says it
reads as ssh and Ansible do (tests/test_reach_differential.py compares nettune with `ssh -G`
and `ansible-inventory --list` on them). Seeded: a failing case is rebuilt from its seed.

Every config is a ~/.ssh directory: `config`, sometimes included files, and stand-in key
files for half the names IdentityFile uses, so "which key is offered" is tested too."""
from __future__ import annotations

import json
import random
from pathlib import Path

NAMES = ["localhost.", "web1", "web2.corp", "db", "gw", "jump1", "Bastion", "10.0.0.5", "app.example.com", "cache-01", "localhost", "LocalHost"]
PATTERNS = ['"web1"', "LOCALHOST", "localhost", "WEB*", "web*", "*.corp", "db", "gw", "jump?", "Bastion", "bastion", "10.0.0.*", "*.example.com", "cache-0[1]", "*", "web1,db",
            "!db", "!web*", "app*", "*1"]
HOSTNAMES = ["localhost.", "LOCALHOST", "%h.example", "10.1.2.3", "real-%h", "web1", "BIG.Example.ORG", "0x7f.1", "::1", "%h", "gw.internal", "%%h", "127.1"]
USERS = ["alice", "bob", "root", "deploy@corp.example", "u%h", "Admin"]
PORTS = ["22", "2222", "2200", "ssh", "1", "65535", "022"]
KEYS = ["${HOME}/.ssh/k1", "~/.ssh/id_%C", "${NETTUNE_UNSET_VAR}/k", "~/.ssh/id_%k", "~/.ssh/id_%i", "~/.ssh/id_%h", "~/.ssh/k1", "%d/.ssh/k2", "~/.ssh/id_ed25519", "~/.ssh/k_%r", "~/.ssh/k_%p", "~/.ssh/id_rsa",
        "~/.ssh/k_%n", '"~/.ssh/key 3"', "~/.ssh/k_%u", "~/.ssh/k_%l"]
JUMPS = ["gw", "alice@gw:2200", "gw,jump1", "none", "jump1", "root@10.0.0.5", "Bastion", "ssh://bob@gw:2022", "gw:2201,alice@jump1"]
PROXIES = ["ssh -W %h:%p gw", "ssh -q -W %h:%p alice@gw", "exec ssh -W %h:%p jump1", "ssh -W [%h]:%p -p 2202 gw", "none"]
KNOWN = ["~/.ssh/kh_%k", "%d/.ssh/kh_%r ~/.ssh/kh1", "~/.ssh/kh1 ~/.ssh/kh_%h", "none", "/dev/null", "~/.ssh/known_hosts", "~/.ssh/kh1"]
STRICT = ["yes", "accept-new", "ask", "no", "off", "true"]
TIMEOUTS = ["5", "0", "1m", "30s", "none"]
MATCHES = ["host web1", "host *.corp,db", "originalhost web*", "user alice", "user root", "final", "canonical", "all",
           "exec true", "!host db", "host gw final", "originalhost Bastion", "host 10.1.2.3", "localuser root", "host real-*",
           "host localhost canonical", "user bob,alice", "exec \"test %h = gw\"", "!final", "host=web1", "originalhost localhost"]


def _directive(r: random.Random) -> str:
    kw, values = r.choice([
        ("HostName", HOSTNAMES), ("User", USERS), ("Port", PORTS), ("IdentityFile", KEYS), ("IdentityFile", KEYS),
        ("IdentitiesOnly", ["yes", "no"]), ("IdentityAgent", ["none", "~/.agent.sock", "SSH_AUTH_SOCK"]),
        ("ProxyJump", JUMPS), ("ProxyJump", JUMPS), ("ProxyCommand", PROXIES), ("UserKnownHostsFile", KNOWN),
        ("GlobalKnownHostsFile", ["/etc/ssh/gkh", "none"]), ("StrictHostKeyChecking", STRICT), ("ConnectTimeout", TIMEOUTS),
        ("CanonicalizeHostname", ["yes", "no", "always"]), ("CanonicalDomains", ["corp example.com", "none", "localdomain"]), ("CanonicalizePermittedCNAMEs", ["*:*.example.com", "*.corp:canon.*,gw.*", "none"]), ("CanonicalizeHostname", ["yes", "always"]),
        ("CanonicalizeMaxDots", ["0", "1", "3"]), ("CanonicalizeFallbackLocal", ["yes", "no"]), ("HostKeyAlias", ["alias-%h"]),
        ("ServerAliveInterval", ["10"]), ("IgnoreUnknown", ["UseKeychain,AddKeysToAgentX"]), ("UseKeychain", ["yes"]),
        ("IdentityAgent", ["%d/.agent-%r"]), ("Include", ["/etc/ssh/nettune-nope.conf", "inc.conf"]), ("ForwardAgent", ["yes"]), ("Compression", ["yes"]),
    ])
    value = r.choice(values)
    key = r.choice([kw, kw.lower(), kw.upper()])
    sep = r.choice([" ", " ", "=", " = ", "\t"])
    trail = r.choice(["", "", "", "  # a comment"])
    return f"{r.choice(['', '  ', chr(9)])}{key}{sep}{value}{trail}"


def _block_head(r: random.Random) -> str:
    if r.random() < 0.7:
        pats = r.sample(PATTERNS, r.choice([1, 1, 2, 3]))
        return f"Host {' '.join(pats)}" + r.choice(["", "", " # hosts"])
    return f"Match {r.choice(MATCHES)}"


def _lines(r: random.Random, blocks: int) -> list[str]:
    out: list[str] = []
    for _ in range(r.randint(0, 2)):  # before any Host: applies to every host
        out.append(_directive(r))
    for _ in range(blocks):
        out.append(_block_head(r))
        out += [_directive(r) for _ in range(r.randint(1, 4))]
    return out


def ssh_case(seed: int, into: Path) -> list[str]:
    """Write one ~/.ssh directory into `into`; the destinations to ask for."""
    r = random.Random(seed)
    into.mkdir(parents=True)
    lines = _lines(r, r.randint(2, 6))
    if r.random() < 0.4:  # Include, relative (under ~/.ssh) or a glob of a directory
        sub = _lines(r, r.randint(1, 3))
        if r.random() < 0.5:
            (into / "inc.conf").write_text("\n".join(sub) + "\n")
            lines.insert(r.randint(0, len(lines)), f"Include {r.choice(['inc.conf', '~/.ssh/inc.conf', 'inc.*'])}")
        else:
            (into / "conf.d").mkdir()
            (into / "conf.d" / "10-a.conf").write_text("\n".join(sub) + "\n")
            (into / "conf.d" / "20-b.conf").write_text("\n".join(_lines(r, 1)) + "\n")
            lines.insert(r.randint(0, len(lines)), "Include conf.d/*.conf")
    if r.random() < 0.3:  # defaults at the end, as many real configs have
        lines += ["Host *", *[_directive(r) for _ in range(r.randint(1, 3))]]
    (into / "config").write_text("\n".join(lines) + "\n")
    keys = ["id_web1", "k1", "k2", "id_ed25519", "k_alice", "k_2222", "id_rsa", "k_db", "key 3", "k_root", "id_gw", "id_10.1.2.3"]
    for k in r.sample(keys, len(keys) // 2):
        (into / k).write_text("a stand-in private key\n")
        (into / k).chmod(0o600)
    hosts: list = r.sample(NAMES, r.randint(3, 6)) + ["WEB1", "unlisted.example"]
    for h in r.sample(NAMES, 2):  # a study's own user, port or jump win, as ssh -l/-p/-J
        given = {k: r.choice(v) for k, v in (("user", ["carol", "root"]), ("port", [2022, 22]), ("jump", ["gw", "none", "alice@jump1:2200"]))
                 if r.random() < 0.5}
        hosts.append([h, given])
    if r.random() < 0.5:  # names that resolve, some by an alias (what a CNAME is to ssh), in the oracle's namespace only
        (into / "etc_hosts").write_text("127.0.0.1 localhost\n198.18.0.50 canon.example.com web1 db.corp web2.corp\n"
                                        "198.18.0.51 gw.example.com gw jump1.corp\n198.18.0.52 db\n")
    (into / "hosts.json").write_text(json.dumps(hosts))
    return hosts


# -- Ansible -----------------------------------------------------------------------
GROUPS = ["web", "db", "prod", "staging", "east", "all_web", "web-east", "ungrouped"]
AVARS = {
    "ansible_host": ["10.0.0.1", "10.0.0.2", "web1.example", "gw"],
    "ansible_port": [22, 2222, "2200"],
    "ansible_user": ["alice", "root", "deploy"],
    "ansible_ssh_user": ["bob"],
    "ansible_ssh_host": ["10.9.9.9"],
    "ansible_ssh_port": [2022],
    "ansible_become": [True, "yes", False],
    "ansible_ssh_common_args": ["-o ProxyJump=gw", "-J alice@gw:2200", "-o StrictHostKeyChecking=accept-new", "-o User=carol -p 2300",
                                "-o IdentitiesOnly=yes -i ~/.ssh/k2", "-o ProxyCommand='ssh -W %h:%p gw'", "-oPort=2600 -lerin",
                                "-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no", "-o 'ProxyJump none'", "-q -4 -o ConnectTimeout=3"],
    "ansible_ssh_args": ["-o ControlMaster=no", "-C -o Port=2500", "", "-o User=frank"],
    "ansible_ssh_extra_args": ["-o Port=2400", "-l dave"],
    "ansible_timeout": [5, 30],
    "ansible_ssh_private_key_file": ["~/.ssh/k1", "/root/.ssh/k2"],
    "ansible_group_priority": [1, 5, 10],
    "nettune_role": ["hypervisor", "test"],
    "color": ["red", "blue", "green", "a b", "'quoted'", "1.5", "[1, 2]", "{'k': 1}", "yes", "None", "0x10", "~/x"],
    "ansible_connection": ["ssh", "local", "paramiko"],
    "ansible_become_user": ["root", "postgres"],
    "ansible_private_key_file": ["~/.ssh/id_rsa"],
    "ansible_ssh_timeout": [7],
    "ansible_host_key_checking": [False, "false", True],
}


def _vars(r: random.Random, n: int, group: bool) -> dict[str, object]:
    names = [k for k in AVARS if group or k != "ansible_group_priority"]
    return {k: r.choice(AVARS[k]) for k in r.sample(names, n)}


def _ini_value(v: object) -> str:
    return str(v) if not isinstance(v, str) or " " not in v else f'"{v}"'


def ansible_case(seed: int, into: Path) -> Path:
    """Write one inventory (INI or YAML, with group_vars/ and host_vars/ sometimes); its path."""
    r = random.Random(seed)
    into.mkdir(parents=True)
    groups = r.sample(GROUPS, r.randint(2, 4))
    children = {g: [c for c in groups if c != g and groups.index(c) > groups.index(g) and r.random() < 0.3] for g in groups}
    pool = ["h1", "h2", "web[01:03]", "db-[a:b]", "10.0.0.7", "h3:2201", "node[1:5:2].lab", "x_1", "[2001:db8::1]:2202", "2001:db8::2",
            "web[9:11]", "Up.Case", "h1:2203"]
    members = {g: r.sample(pool, r.randint(0, 3)) for g in groups}
    gvars = {g: _vars(r, r.randint(0, 3), True) for g in groups}
    all_vars = _vars(r, r.randint(0, 2), False)
    hostvars = {h: _vars(r, r.randint(0, 3), False) for g in groups for h in members[g] if r.random() < 0.5}
    yaml = r.random() < 0.5
    if yaml:
        import yaml as y

        def body(g: str) -> dict[str, object]:
            b: dict[str, object] = {}
            if members[g]:
                b["hosts"] = {h: (hostvars.get(h) or None) for h in members[g]}
            if gvars[g]:
                b["vars"] = gvars[g]
            if children[g]:
                b["children"] = {c: None for c in children[g]}
            return b
        top = {g: body(g) for g in groups}
        inv = {"all": {"children": top, **({"vars": all_vars} if all_vars else {})}}
        path = into / r.choice(["hosts.yml", "inventory.yaml"])
        path.write_text(y.safe_dump(inv, sort_keys=False))
    else:
        lines = ["# an inventory", ""] if r.random() < 0.5 else []
        lines += [f"{h} " + " ".join(f"{k}={_ini_value(v)}" for k, v in hostvars.get(h, {}).items()) for h in r.sample(pool, 1)]
        for g in groups:
            lines.append(f"[{g}]")
            lines += [(f"{h} " + " ".join(f"{k}={_ini_value(v)}" for k, v in hostvars.get(h, {}).items())).rstrip() for h in members[g]]
            if gvars[g]:
                lines.append(f"[{g}:vars]")
                lines += [f"{k}={_ini_value(v)}" for k, v in gvars[g].items()]
            if children[g]:
                lines.append(f"[{g}:children]")
                lines += children[g]
        if all_vars:
            lines.append("[all:vars]")
            lines += [f"{k}={_ini_value(v)}" for k, v in all_vars.items()]
        path = into / r.choice(["hosts", "hosts.ini", "inventory"])
        path.write_text("\n".join(lines) + "\n")
    import yaml as y

    if r.random() < 0.5:  # group_vars/ and host_vars/ beside it, as files or directories
        for g in r.sample(groups + ["all"], 2):
            d = into / "group_vars"
            d.mkdir(exist_ok=True)
            data = _vars(r, r.randint(1, 3), True)
            if r.random() < 0.5:
                (d / f"{g}.yml").write_text(y.safe_dump(data))
            else:
                (d / g).mkdir(exist_ok=True)
                (d / g / "main.yml").write_text(y.safe_dump(data))
        for h in ["h1", "web02", "10.0.0.7", "db-a"]:
            if r.random() < 0.4:
                (into / "host_vars").mkdir(exist_ok=True)
                (into / "host_vars" / f"{h}{r.choice(['', '.yml', '.yaml'])}").write_text(y.safe_dump(_vars(r, r.randint(1, 3), False)))
    return path
