"""Hosts chosen by the sweep (issue 19): `server = "{os}-a"`, pairs and [knobs.hosts]
templates resolve per point, a name that is no host is a one-line SpecError naming file,
field, point and fix before anything runs, and knobs follow each point's pair."""
from __future__ import annotations

import pytest

from nettune import parse_study
from nettune.errors import SpecError
from nettune.knobs.keys import knob_items
from nettune.plan.points import expand_and_check

BASE = """name = "nt-hb"
[target]
kind = "lab"
hosts = ["freebsd-a", "freebsd-b", "debian-a", "debian-b"]
[workload]
engine = "iperf2"
server = "{os}-a"
client = "{os}-b"
duration = 2
[sweep]
os = ["freebsd", "debian"]
mtu = [1500, 9000]
[knobs]
mtu = "{mtu}"
"offload:gro" = "off"
[knobs.hosts]
"offload:gro" = ["freebsd-a", "freebsd-b"]
"""


def _points(text: str):
    study = parse_study(text, "b.toml")
    return study, expand_and_check(study, text, "b.toml")


def test_the_sweep_chooses_the_pair_and_knobs_follow_it():
    _, pts = _points(BASE)
    seen = {(rp.point.params["os"], rp.workload.server, rp.workload.client) for rp in pts}
    assert seen == {("freebsd", "freebsd-a", "freebsd-b"), ("debian", "debian-a", "debian-b")}
    for rp in pts:
        knobs, hosts = knob_items(rp.extra["knobs"])
        os_ = rp.point.params["os"]
        assert hosts["mtu"] == [f"{os_}-a", f"{os_}-b"]  # only this point's pair
        assert hosts["offload:gro"] == ["freebsd-a", "freebsd-b"]  # as written
        assert knobs["mtu"] == rp.point.params["mtu"]


def test_fixed_hosts_keep_every_host_by_default():
    text = BASE.replace('"{os}-a"', '"freebsd-a"').replace('"{os}-b"', '"freebsd-b"')
    _, pts = _points(text)
    for rp in pts:
        _, hosts = knob_items(rp.extra["knobs"])
        assert "mtu" not in hosts  # no entry: every host, as before


@pytest.mark.parametrize("edit,field,name", [
    (('os = ["freebsd", "debian"]', 'os = ["freebsd", "netbsd"]'), "workload.server", "netbsd-a"),
    (('client = "{os}-b"', 'client = "{os}-c"'), "workload.client", "freebsd-c"),
    (('"offload:gro" = ["freebsd-a", "freebsd-b"]', '"offload:gro" = ["{os}-x"]'), "knobs.hosts.offload:gro", "freebsd-x"),
])
def test_a_template_naming_no_host_is_one_line_naming_file_field_point_and_fix(edit, field, name):
    with pytest.raises(SpecError) as e:
        parse_study(BASE.replace(*edit), "b.toml")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("b.toml:") and f": {field}: {name!r}" in msg
    assert "(at point os=" in msg and "must give one of them at every point" in msg
    assert "freebsd-a, freebsd-b, debian-a, debian-b" in msg


def test_pairs_follow_the_sweep_and_are_checked_per_point():
    text = BASE.replace('server = "{os}-a"\nclient = "{os}-b"\n', 'pairs = [["{os}-a", "{os}-b"]]\n')
    _, pts = _points(text)
    assert {tuple(map(tuple, rp.workload.pairs))[0] for rp in pts} == {("freebsd-a", "freebsd-b"), ("debian-a", "debian-b")}
    for rp in pts:
        _, hosts = knob_items(rp.extra["knobs"])
        assert hosts["mtu"] == [f"{rp.point.params['os']}-a", f"{rp.point.params['os']}-b"]
    star = BASE.replace('server = "{os}-a"\nclient = "{os}-b"\n', 'pairs = "star:{os}-a"\n')
    _, pts = _points(star)
    assert {rp.workload.pairs for rp in pts} == {"star:freebsd-a", "star:debian-a"}
    with pytest.raises(SpecError) as e:
        parse_study(text.replace('"{os}-b"]]', '"{os}-z"]]'), "b.toml")
    assert "workload.pairs: 'freebsd-z' (at point os=freebsd" in str(e.value)


def test_a_pair_of_one_host_at_some_point_is_refused():
    text = BASE.replace('client = "{os}-b"', 'client = "{peer}"').replace('mtu = [1500, 9000]', 'mtu = [1500, 9000]\npeer = ["freebsd-a", "debian-b"]')
    with pytest.raises(SpecError) as e:
        parse_study(text, "b.toml")
    assert "server and client must be different hosts" in str(e.value) and "at point" in str(e.value)


def test_dry_run_shows_each_points_pair_and_its_knob_hosts():
    from nettune.commands.dry_run import dry_run

    study = parse_study(BASE, "b.toml")
    plan = dry_run(study, BASE, "b.toml")
    by_os = {p.label.split(",")[0]: p for p in plan.planned}
    fb, deb = by_os["os=freebsd"], by_os["os=debian"]
    assert (fb.server_host, fb.client_host) == ("freebsd-a", "freebsd-b")
    assert (deb.server_host, deb.client_host) == ("debian-a", "debian-b")
    assert fb.server_argv[fb.server_argv.index("-B") + 1] != deb.server_argv[deb.server_argv.index("-B") + 1]
    assert any("mtu=1500 (debian-a,debian-b)" in n or "mtu=9000 (debian-a,debian-b)" in n for n in deb.notes)


def test_hypervisors_keep_their_knobs_when_the_sweep_picks_the_pair():
    text = """name = "nt-hv"
[target]
kind = "ssh"
[target.hosts.a1]
address = "192.0.2.11"
[target.hosts.a2]
address = "192.0.2.12"
[target.hosts.b1]
address = "192.0.2.13"
[target.hosts.b2]
address = "192.0.2.14"
[target.hosts.pve]
address = "192.0.2.2"
role = "hypervisor"
[workload]
server = "{g}1"
client = "{g}2"
[sweep]
g = ["a", "b"]
[knobs]
"sysctl:net.core.somaxconn" = 4096
"""
    _, pts = _points(text)
    assert [knob_items(rp.extra["knobs"])[1]["sysctl:net.core.somaxconn"] for rp in pts] == [["a1", "a2", "pve"], ["b1", "b2", "pve"]]
    with pytest.raises(SpecError) as e:
        parse_study(text.replace('server = "{g}1"', 'server = "{g}"').replace('client = "{g}2"', 'client = "a2"').replace('["a", "b"]', '["a1", "pve"]'), "hv.toml")
    assert "workload.server: 'pve' (at point g=pve) is not a target host that runs tests (a1, a2, b1, b2)" in str(e.value)


COMMAND = """name = "nt-hc"
[target]
kind = "lab"
hosts = ["host", "vm"]
[workload]
engine = "command"
host = "{machine}"
run = ["true"]
[sweep]
machine = ["host", "vm"]
[knobs]
"sysctl:net.core.somaxconn" = 1024
"""


def test_a_command_runs_on_the_host_the_sweep_names_and_its_knobs_follow_it():
    """study C: the same build on the host and in the VM; server/client do not apply."""
    _, pts = _points(COMMAND)
    for rp in pts:
        _, hosts = knob_items(rp.extra["knobs"])
        assert rp.workload.host == rp.point.params["machine"]
        assert hosts["sysctl:net.core.somaxconn"] == [rp.point.params["machine"]]  # only the machine that runs it


def test_a_command_host_template_naming_no_host_is_refused_before_anything_runs():
    with pytest.raises(SpecError) as e:
        _points(COMMAND.replace('machine = ["host", "vm"]', 'machine = ["host", "guest"]'))
    msg = str(e.value)
    assert msg.startswith("b.toml:") and "workload.host" in msg and "'guest'" in msg and "machine=guest" in msg and "\n" not in msg
