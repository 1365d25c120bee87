"""Hosts named only, resolved through an OpenSSH client config as `ssh NAME` would resolve
them (nettune's reader of OpenSSH's rules). Each defect of issue 36 has its test here, and
where `ssh` is installed the same file is also given to `ssh -G` (which never connects), so
the expected value is ssh's own, not a guess. No root, no network."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from nettune.errors import SpecError
from nettune.plan.study_file import parse_study
from nettune.studyfile.ssh_config import SshConfigError, resolve

try:
    from nettune.studyfile.local_commands import allow_local_commands
except ImportError:  # the code before issue 36: every read ran Match exec
    from contextlib import nullcontext as allow_local_commands  # type: ignore[assignment]

SSH = shutil.which("ssh")


def ssh_g(cfg: Path, host: str, env: dict[str, str] | None = None) -> dict[str, str] | str:
    """`ssh -G -F cfg host` as {keyword: value} (first line of each), or ssh's error."""
    r = subprocess.run([SSH, "-G", "-F", str(cfg), host], capture_output=True, encoding="utf-8", errors="replace", env={**os.environ, **(env or {})},
                       stdin=subprocess.DEVNULL, timeout=30)
    if r.returncode != 0:
        return r.stderr.strip()
    out: dict[str, str] = {}
    for line in r.stdout.splitlines():
        k, _, v = line.partition(" ")
        out.setdefault(k, v)
    return out


def write(tmp_path: Path, text: str | bytes, name: str = "config") -> Path:
    f = tmp_path / name
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    f.chmod(0o644)
    return f


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    for k in ("id_bastion", "id_pve"):
        (tmp_path / k).write_text("not used here\n")
    (tmp_path / "kh").write_text("")
    write(tmp_path, "Host inc\n  HostName 198.18.5.5\n  User included\n", "more.conf")
    return write(tmp_path, f"""Include {tmp_path}/more.conf
Host bastion
  HostName 198.18.0.9
  User jump
  IdentityFile {tmp_path}/id_bastion
  IdentitiesOnly yes
  StrictHostKeyChecking accept-new

Host inner
  HostName 198.18.0.20
  ProxyJump bastion

Host pve*
  User root
  ProxyJump inner,gw@198.18.0.30:2022
  ConnectTimeout 7

Host pve1
  HostName 198.18.1.10
  Port 2222
  IdentityFile {tmp_path}/id_pve
  UserKnownHostsFile {tmp_path}/kh

Match originalhost pve2
  User admin
  HostName 198.18.1.11
  ControlMaster auto

Host viacmd
  ProxyCommand nc %h %p
Host nocheck
  StrictHostKeyChecking no
Host lcmd
  LocalCommand echo hi
  PermitLocalCommand yes
Host loop1
  ProxyJump loop2
Host loop2
  ProxyJump loop1
""")


def test_every_directive_ssh_would_use(cfg):
    h = resolve("pve1", cfg, {"role": "test"})
    assert (h["address"], h["port"], h["user"], h["connect_timeout"]) == ("198.18.1.10", 2222, "root", 7.0)
    assert h["key"].endswith("id_pve") and h["agent"] is True  # no IdentitiesOnly: agent keys offered too
    assert h["known_hosts"].endswith("/kh") and h["resolved_from"] == str(cfg)
    # ProxyJump inner,gw@198.18.0.30:2022: ssh reaches gw with `ssh -J inner gw`, and inner
    # as `ssh inner` (whose own ProxyJump, bastion, comes first)
    assert [(j["name"], j["address"], j.get("user"), j.get("port")) for j in h["jump"]] == [
        ("bastion", "198.18.0.9", "jump", 22), ("inner", "198.18.0.20", "root", 22), ("198.18.0.30", "198.18.0.30", "gw", 2022)]
    b = h["jump"][0]
    assert b["agent"] is False and b["trust_on_first_use"] is True and b["key"].endswith("id_bastion")


def test_first_value_wins_and_study_values_win_over_the_file(cfg):
    # `Host pve*` comes before the Match block: User root wins, as in OpenSSH
    assert resolve("pve2", cfg)["user"] == "root" and resolve("pve2", cfg)["address"] == "198.18.1.11"
    mine = resolve("pve1", cfg, {"user": "me", "port": 22, "jump": "none"})
    assert (mine["user"], mine["port"], mine["jump"]) == ("me", 22, [])  # "none": no jump host
    assert resolve("inc", cfg)["user"] == "included"  # Include


@pytest.mark.parametrize("host,words", [("viacmd", "ProxyCommand"), ("nocheck", "StrictHostKeyChecking no"),
                                         ("lcmd", "LocalCommand"), ("loop1", "jump hosts deep")])
def test_what_nettune_cannot_honour_is_an_error_naming_it(cfg, host, words):
    with pytest.raises(SshConfigError, match=words):
        resolve(host, cfg)


def _study(hosts: str, extra: str = "") -> str:
    return f'name = "t"\n[target]\nkind = "ssh"\n{extra}\n{hosts}\n[workload]\nserver = "pve1"\nclient = "pve2"\n'


def test_a_study_naming_hosts_only(cfg):
    s = parse_study(_study("[target.hosts.pve1]\n[target.hosts.pve2]\nuser = \"me\"", f'ssh_config = "{cfg}"'))
    assert s.target.hosts["pve1"].address == "198.18.1.10" and s.target.hosts["pve2"].user == "me"
    assert [j.name for j in s.target.hosts["pve1"].jump] == ["bastion", "inner", "198.18.0.30"]


def test_bad_ssh_config_is_one_line_naming_host_and_fix(cfg, tmp_path):
    with pytest.raises(SpecError) as e:
        parse_study(_study("[target.hosts.viacmd]\n[target.hosts.pve1]\n[target.hosts.pve2]", f'ssh_config = "{cfg}"'))
    msg = str(e.value)
    assert "\n" not in msg and "viacmd" in msg and "ProxyCommand" in msg and "use ProxyJump" in msg
    with pytest.raises(SpecError, match="does not exist"):
        parse_study(_study("[target.hosts.pve1]\n[target.hosts.pve2]", f'ssh_config = "{tmp_path}/nope"'))


# -- issue 36: files ssh refuses are refused, with ssh's reason --------------------------------
REFUSED = {
    "unknown option": ("Host *\n  UseKeychain yes\nHost a\n  HostName 198.18.0.1\n", "Bad configuration option: usekeychain", 2),
    "made-up directive": ("Host a\n  HostName 198.18.0.1\n  Frobnicate 3\n", "Bad configuration option: frobnicate", 3),
    "unset variable": ("Host a\n  HostName 198.18.0.1\n  UserKnownHostsFile ${NETTUNE_SURELY_UNSET}/kh\n", "NETTUNE_SURELY_UNSET", None),
    "bad value": ("Host a\n  HostName 198.18.0.1\n  Port 99999\n", "Bad port", 3),
    "bad value where it does not apply": ("Host other\n  ConnectTimeout soon\nHost a\n  HostName 198.18.0.1\n", "invalid time value", 2),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_config_ssh_refuses_is_refused_with_its_reason(tmp_path, case):
    text, reason, line = REFUSED[case]
    f = write(tmp_path, text)
    with pytest.raises(SshConfigError) as e:
        resolve("a", f)
    assert reason in str(e.value) and str(f) in str(e.value) and "\n" not in str(e.value)
    if line is not None:
        assert f"line {line}" in str(e.value)
    if SSH:
        assert isinstance(ssh_g(f, "a"), str), "ssh -G accepts it: the test's file is wrong"


def test_ignore_unknown_makes_an_unknown_option_harmless(tmp_path):
    f = write(tmp_path, "IgnoreUnknown UseKeychain,AddKeysToAgent2\nHost *\n  UseKeychain yes\nHost a\n  HostName 198.18.0.1\n")
    assert resolve("a", f)["address"] == "198.18.0.1"
    if SSH:
        assert ssh_g(f, "a")["hostname"] == "198.18.0.1"


def test_a_bad_match_inside_an_included_file_is_refused(tmp_path):
    inc = write(tmp_path, "Match hostx foo\n  User x\n", "inc.conf")
    f = write(tmp_path, f"Include {inc}\nHost a\n  HostName 198.18.0.1\n")
    with pytest.raises(SshConfigError, match=r"inc.conf line 1: Unsupported Match attribute hostx"):
        resolve("a", f)
    if SSH:
        assert isinstance(ssh_g(f, "a"), str)


def test_a_config_with_wrong_permissions_included_is_refused_like_ssh(tmp_path):
    inc = write(tmp_path, "Host a\n  User x\n", "inc.conf")
    inc.chmod(0o666)
    f = write(tmp_path, f"Include {inc}\n")
    with pytest.raises(SshConfigError, match="Bad owner or permissions"):
        resolve("a", f)
    if SSH:
        assert "Bad owner or permissions" in ssh_g(f, "a")


# -- Match final / canonical, Match host, Match exec ---------------------------------------
def test_match_final_and_canonical_blocks_apply_as_in_sshs_final_pass(tmp_path):
    (tmp_path / "kh_final").write_text("")
    f = write(tmp_path, f"""Host web
  HostName WEB.Example.TEST
Match final host web.example.test
  User deploy
  UserKnownHostsFile {tmp_path}/kh_final
  StrictHostKeyChecking accept-new
Match canonical
  Port 2200
Match !final
  IdentitiesOnly yes
""")
    h = resolve("web", f)
    assert (h["address"], h["user"], h["port"], h["known_hosts"], h["trust_on_first_use"]) == (
        "web.example.test", "deploy", 2200, f"{tmp_path}/kh_final", True)
    assert h["agent"] is False  # `Match !final` applied in the first pass
    if SSH:
        g = ssh_g(f, "web")
        assert (g["hostname"], g["user"], g["port"], g["userknownhostsfile"], g["stricthostkeychecking"], g["identitiesonly"]) == (
            "web.example.test", "deploy", "2200", f"{tmp_path}/kh_final", "accept-new", "yes")


def test_match_host_compares_lowercased(tmp_path):
    f = write(tmp_path, "Match host DB1.Example.Test\n  User dba\nHost DB1.Example.Test\n  Port 2201\n")
    h = resolve("DB1.Example.Test", f)
    assert (h["user"], h["port"], h["address"]) == ("dba", 2201, "db1.example.test")
    if SSH:
        g = ssh_g(f, "DB1.Example.Test")
        assert (g["user"], g["port"], g["hostname"]) == ("dba", "2201", "db1.example.test")


def test_match_exec_runs_with_its_tokens_expanded_only_when_allowed(tmp_path):
    seen = tmp_path / "seen"
    f = write(tmp_path, f'Host pi\n  HostName 198.18.7.7\nMatch exec "echo %h %n %p >> {seen}"\n  User fromexec\n')
    h = resolve("pi", f)  # reading a study (a dry run): nothing runs
    assert not seen.exists() and h["user"] != "fromexec"
    assert h["unresolved"] and "Match exec" in h["unresolved"][0] and "not run" in h["unresolved"][0]
    with allow_local_commands():
        h = resolve("pi", f)
    assert seen.read_text() == "198.18.7.7 pi 22\n" and h["user"] == "fromexec"  # %h is HostName, %n as typed
    assert h["local_commands"] and "exit 0" in h["local_commands"][0] and not h.get("unresolved")


# -- comments, ProxyJump chains, known hosts, values ssh accepts ----------------------------
def test_comments_after_host_patterns_and_values_are_ignored_as_ssh_does(tmp_path):
    f = write(tmp_path, "Host pi  # Raspberry Pi\n  HostName 198.18.3.3   # the lab\n  User pi # owner\n")
    h = resolve("pi", f)
    assert (h["address"], h["user"]) == ("198.18.3.3", "pi")
    other = resolve("Raspberry", f)  # the comment's words are not patterns
    assert other["address"] == "raspberry" and other["user"] != "pi"
    if SSH:
        g = ssh_g(f, "pi")
        assert (g["hostname"], g["user"]) == ("198.18.3.3", "pi")


def test_proxyjump_a_b_reaches_b_through_a_ignoring_bs_own_jump(tmp_path):
    f = write(tmp_path, "Host a\n  HostName 198.18.0.1\nHost b\n  HostName 198.18.0.2\n  ProxyJump b-own\n"
                        "Host b-own\n  HostName 198.18.0.99\nHost target\n  HostName 198.18.0.3\n  ProxyJump a,b\n")
    h = resolve("target", f)
    assert [(j["name"], j["address"]) for j in h["jump"]] == [("a", "198.18.0.1"), ("b", "198.18.0.2")]
    if SSH:  # ssh's own view of the last hop: `ssh -J a b` keeps -J a
        r = subprocess.run([SSH, "-G", "-F", str(f), "-J", "a", "b"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert "proxyjump a\n" in r.stdout


def test_global_known_hosts_files_are_read_too(tmp_path):
    (tmp_path / "global_kh").write_text("")
    f = write(tmp_path, f"Host g\n  HostName 198.18.0.4\n  GlobalKnownHostsFile {tmp_path}/global_kh {tmp_path}/nope\n")
    h = resolve("g", f)
    assert f"{tmp_path}/global_kh" in h["more_known_hosts"] and f"{tmp_path}/nope" in h["more_known_hosts"]
    if SSH:
        assert ssh_g(f, "g")["globalknownhostsfile"] == f"{tmp_path}/global_kh {tmp_path}/nope"


def test_long_connect_timeout_user_with_at_and_non_utf8_bytes_are_accepted(tmp_path):
    f = write(tmp_path, b"# caf\xe9 (Latin-1)\nHost ad\n  HostName 198.18.0.5\n  User alice@corp.example\n  ConnectTimeout 600\n"
                        b"  SetEnv NOTE=\xe9t\xe9\n")
    h = resolve("ad", f)
    assert (h["user"], h["connect_timeout"]) == ("alice@corp.example", 600.0)
    s = parse_study(_study("[target.hosts.pve1]\n[target.hosts.pve2]", f'ssh_config = "{f}"').replace('"pve1"', '"ad"')
                    .replace("[target.hosts.pve1]", "[target.hosts.ad]"))
    assert s.target.hosts["ad"].connect_timeout == 600.0 and s.target.hosts["ad"].user == "alice@corp.example"
    if SSH:
        g = ssh_g(f, "ad")
        assert (g["user"], g["connecttimeout"]) == ("alice@corp.example", "600")


def test_an_error_in_a_non_utf8_file_names_file_and_line(tmp_path):
    f = write(tmp_path, b"# \xff\xfe\nHost x\n  Port \xe9\n")
    with pytest.raises(SshConfigError) as e:
        resolve("x", f)
    assert f"{f} line 3" in str(e.value) and "Bad port" in str(e.value)


def test_a_host_read_without_running_its_match_exec_is_never_connected(tmp_path):
    from nettune.studyfile.ssh_hosts import SshHostSpec
    from nettune.targets.ssh.ssh import SshError, SshHost
    from nettune.targets.ssh.sshproc import EventLoopThread

    f = write(tmp_path, 'Host pi\n  HostName 127.0.0.1\n  Port 1\nMatch exec "true"\n  User fromexec\n')
    spec = SshHostSpec.model_validate({k: v for k, v in resolve("pi", f).items() if k != "resolved_from"})
    loop = EventLoopThread()
    host = SshHost("pi", spec, loop, connect_timeout=2)
    try:
        with pytest.raises(SshError, match="not connected: Match exec 'true'"):
            host.connect()  # its user may be ssh's or not: no connection is even tried (port 1 would refuse it)
    finally:
        host.close()
        loop.stop()


def test_keys_in_global_known_hosts_files_are_pinned_too(tmp_path):
    import asyncssh

    from nettune.targets.ssh.sshtrust import host_trust

    key = asyncssh.generate_private_key("ssh-ed25519")
    line = " ".join(key.export_public_key("openssh").decode().split()[:2])
    (tmp_path / "global_kh").write_text(f"198.18.0.4 {line}\n")
    f = write(tmp_path, f"Host g\n  HostName 198.18.0.4\n  UserKnownHostsFile {tmp_path}/none_here\n"
                        f"  GlobalKnownHostsFile {tmp_path}/global_kh\n")
    h = resolve("g", f)
    trust = host_trust("g", h["address"], h["port"], h.get("known_hosts"), str(tmp_path / "tofu"), False, None, h["more_known_hosts"])
    assert trust.record is False and trust.known_hosts is not None  # the key is pinned: strict checking, nothing asked
    assert trust.known_hosts.match("198.18.0.4", "198.18.0.4", None)[0]
    assert trust.pinned_file == f"{tmp_path}/none_here"  # a key still to add goes to the user file ssh would write


@pytest.mark.parametrize("text", [
    "Host x\n  ProxyJump none\n  ProxyCommand ssh -W %h:%p gw\n",     # `ProxyJump none` first does not stop a ProxyCommand
    "Host x\n  ProxyCommand ssh -W %h:%p gw  # via gw\n",               # sh ends the command at its comment
])
def test_proxycommand_after_proxyjump_none_and_with_a_comment_is_a_jump(tmp_path, text):
    """Found by tests/test_reach_differential.py: nettune dropped the ProxyCommand after
    `ProxyJump none` (no hop: a direct connection where ssh goes through gw), and refused a
    ProxyCommand ending in a shell comment."""
    cfg = write(tmp_path, text)
    with allow_local_commands():
        got = resolve("x", cfg)
    assert [h["name"] for h in got["jump"]] == ["gw"]
    if SSH:
        assert ssh_g(cfg, "x")["proxycommand"].startswith("ssh -W %h:%p gw")  # type: ignore[index]


def test_connecttimeout_none_leaves_it_unset_and_proxyjump_none_with_a_comment_is_refused(tmp_path):
    """Found by tests/test_reach_differential.py. `ConnectTimeout none` is ssh's "unset": a
    later line still sets it (nettune kept none: no timeout where ssh waits 30 s). And ssh
    9.2 reads `ProxyJump none  # note` as a jump host named "none" (it compares the value,
    comment included, with "none"), where nettune connected directly: now refused in one line."""
    cfg = write(tmp_path, "Host x\n  ConnectTimeout none\nHost *\n  ConnectTimeout 30\n")
    assert resolve("x", cfg)["connect_timeout"] == 30.0
    if SSH:
        assert ssh_g(cfg, "x")["connecttimeout"] == "30"  # type: ignore[index]
    cfg = write(tmp_path, "Host x\n  ProxyJump none  # no jump host\n", "config2")
    with pytest.raises(SshConfigError, match=r"line 2: ProxyJump none  # no jump host: .*cannot tell"):
        resolve("x", cfg)
    if SSH:
        assert ssh_g(cfg, "x")["proxyjump"] == "none"  # type: ignore[index]
    cfg = write(tmp_path, "Host x\n  ProxyJump none\n", "config3")
    assert resolve("x", cfg)["jump"] == []


def test_percent_k_in_file_names_is_the_name_as_typed(tmp_path):
    """Found by tests/test_reach_differential.py: in UserKnownHostsFile, IdentityFile and
    IdentityAgent, ssh's %k is HostKeyAlias, else the destination as typed (ssh.c's
    host_arg), not the HostName; nettune read host keys from kh_real.example, ssh from kh_x."""
    cfg = write(tmp_path, f"Host x\n  HostName Real.Example\n  UserKnownHostsFile {tmp_path}/kh_%k\n")
    assert resolve("x", cfg)["more_known_hosts"][0] == f"{tmp_path}/kh_x"
    if SSH:
        assert ssh_g(cfg, "x")["userknownhostsfile"] == f"{tmp_path}/kh_x"  # type: ignore[index]


def test_match_not_final_asks_for_the_final_pass_too(tmp_path):
    """Found by tests/test_reach_differential.py: ssh 9.2 makes the final pass after any
    `Match final`, negated or not, so `Match canonical` blocks then apply (Port 2222 here);
    nettune skipped the pass for `Match !final` and connected to port 22."""
    cfg = write(tmp_path, "Match !final\n  User bob\nMatch canonical\n  Port 2222\n")
    got = resolve("x", cfg)
    assert (got["user"], got["port"]) == ("bob", 2222)
    if SSH:
        assert ssh_g(cfg, "x")["port"] == "2222"  # type: ignore[index]


def _fake_resolver(monkeypatch, names: dict[str, str]):
    """The resolver's answers (name -> canonical name), so no DNS query leaves the machine;
    tests/test_reach_differential.py checks the same against ssh -G with a real /etc/hosts."""
    import socket

    from nettune.studyfile import ssh_config_read

    def getaddrinfo(name, port, *a, **k):
        if name.rstrip(".") not in names:
            raise socket.gaierror(-2, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, names[name.rstrip(".")], ("198.18.0.50", 0))]
    monkeypatch.setattr(ssh_config_read.socket, "getaddrinfo", getaddrinfo)


def test_canonicalize_permitted_cnames_follows_aliases_and_refuses_unknown_names(tmp_path, monkeypatch):
    """Found by tests/test_reach_differential.py: nettune ignored CanonicalizePermittedCNAMEs.
    ssh looks the name up, takes the resolver's canonical name when a rule allows it (then the
    final pass matches that name), and refuses a name that does not resolve; `ProxyJump none`
    still counts as a jump for canonicalization (ssh.c's direct test), `ProxyCommand none` not."""
    _fake_resolver(monkeypatch, {"db.corp": "canon.example.com", "web1": "web1"})
    cfg = write(tmp_path, "CanonicalizeHostname yes\nCanonicalDomains corp\nCanonicalizePermittedCNAMEs *.corp:*.example.com\n"
                          "Host canon.example.com\n  User canon\n")
    got = resolve("db", cfg)
    assert (got["address"], got["user"]) == ("canon.example.com", "canon")
    assert resolve("web1", cfg)["address"] == "web1"
    with pytest.raises(SshConfigError, match="Could not resolve hostname nowhere"):
        resolve("nowhere", cfg)
    cfg = write(tmp_path, "CanonicalizeHostname yes\nCanonicalDomains corp\nProxyJump none\n", "config2")
    assert resolve("db", cfg)["address"] == "db"  # not canonicalized: ssh takes it as jumping
    cfg = write(tmp_path, "CanonicalizeHostname yes\nCanonicalDomains corp\nProxyCommand none\n", "config3")
    assert resolve("db", cfg)["address"] == "db.corp"


def test_a_missing_dash_i_file_is_not_used_as_ssh_does(tmp_path):
    """Found by tests/test_reach_differential.py (ansible_ssh_common_args "-o IdentitiesOnly=yes
    -i ~/.ssh/k2"): ssh warns about an -i file that does not exist and leaves it out, so its
    own default keys are offered; nettune kept it as the only key and would have failed."""
    from nettune.studyfile.ssh_resolve import CommandLine, evaluate

    (tmp_path / "present").write_text("a stand-in key\n")
    cfg = write(tmp_path, f"Host x\n  IdentityFile {tmp_path}/present\n  IdentitiesOnly yes\n")
    r = evaluate("x", cfg, CommandLine([("i", str(tmp_path / "missing"))]))
    assert r.identity_files == [str(tmp_path / "present")]
    got = resolve("x", cfg, None, CommandLine([("i", str(tmp_path / "present"))]))
    assert got["key"] == str(tmp_path / "present") and not got.get("more_keys")
    if SSH:
        r = subprocess.run([SSH, "-G", "-F", str(cfg), "-i", str(tmp_path / "missing"), "x"], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=30)
        assert "not accessible" in r.stderr and str(tmp_path / "missing") not in r.stdout
