"""Hosts named only, resolved through an OpenSSH client config like `ssh NAME` would
(asyncssh's own config reader, plus StrictHostKeyChecking and unknown directives)."""
from __future__ import annotations

from pathlib import Path

import pytest
from asyncssh.config import SSHClientConfig

from nettune.errors import SpecError
from nettune.plan.study_file import parse_study
from nettune.studyfile.ssh_config import SshConfigError, ansible_jump, parse_jump, resolve


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    for k in ("id_bastion", "id_pve"):
        (tmp_path / k).write_text("not used here\n")
    (tmp_path / "kh").write_text("")
    (tmp_path / "more.conf").write_text("Host inc\n  HostName 198.18.5.5\n  User included\n")
    f = tmp_path / "config"
    f.write_text(f"""Include {tmp_path}/more.conf
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
Host loop1
  ProxyJump loop2
Host loop2
  ProxyJump loop1
""")
    return f


def test_every_directive_ssh_would_use(cfg):
    h = resolve("pve1", cfg, {"role": "test"})
    assert (h["address"], h["port"], h["user"], h["connect_timeout"]) == ("198.18.1.10", 2222, "root", 7.0)
    assert h["key"].endswith("id_pve") and h["agent"] is True  # no IdentitiesOnly: agent keys offered too
    assert h["known_hosts"].endswith("/kh") and h["resolved_from"] == str(cfg)
    # ProxyJump inner,gw@...: inner's own jump (bastion) comes first, each hop resolved
    assert [(j["name"], j["address"], j.get("user"), j.get("port")) for j in h["jump"]] == [
        ("bastion", "198.18.0.9", "jump", None), ("inner", "198.18.0.20", None, None), ("198.18.0.30", "198.18.0.30", "gw", 2022)]
    b = h["jump"][0]
    assert b["agent"] is False and b["trust_on_first_use"] is True and b["key"].endswith("id_bastion")


def test_first_value_wins_and_study_values_win_over_the_file(cfg):
    # `Host pve*` comes before the Match block: User root wins, as in OpenSSH
    assert resolve("pve2", cfg)["user"] == "root" and resolve("pve2", cfg)["address"] == "198.18.1.11"
    mine = resolve("pve1", cfg, {"user": "me", "port": 22, "jump": "none"})
    assert (mine["user"], mine["port"], mine["jump"]) == ("me", 22, [])  # "none": no jump host
    assert resolve("inc", cfg)["user"] == "included"  # Include


@pytest.mark.parametrize("host,words", [("viacmd", "ProxyCommand"), ("nocheck", "StrictHostKeyChecking no"),
                                         ("lcmd", "LocalCommand"), ("loop1", "hops")])
def test_what_nettune_cannot_honour_is_an_error_naming_it(cfg, host, words):
    with pytest.raises(SshConfigError, match=words):
        resolve(host, cfg)


def test_the_library_table_we_extend_is_still_there():
    # ssh_config.py extends asyncssh's private directive table; this fails if that changes
    assert "proxyjump" in SSHClientConfig._handlers and "stricthostkeychecking" not in SSHClientConfig._handlers


def test_jump_syntax():
    assert parse_jump("a,u@b:2200,ssh://c,[fd00::1]:23") == [(None, "a", None), ("u", "b", 2200), (None, "c", None), (None, "fd00::1", 23)]
    assert ansible_jump("-o ProxyJump=u@b -o UserKnownHostsFile=/k") == ("u@b", ["-oUserKnownHostsFile=/k"])
    assert ansible_jump("-J bastion -C") == ("bastion", ["-C"])
    with pytest.raises(SshConfigError):
        parse_jump("a,,b")


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
    assert "\n" not in msg and "viacmd" in msg and "ProxyCommand" in msg and "ProxyJump instead" in msg
    with pytest.raises(SpecError, match="does not exist"):
        parse_study(_study("[target.hosts.pve1]\n[target.hosts.pve2]", f'ssh_config = "{tmp_path}/nope"'))
