"""The [knobs] section: keys, values from sweep parameters, and one-line errors naming the field."""
import pytest

from nettune.errors import SpecError
from nettune.knobs.precheck import precheck
from nettune.knobs.keys import parse_key
from nettune.plan.points import expand_and_check
from nettune import parse_study
from nettune.targets import make_target

BASE = """
name = "tk-spec"
[target]
kind = "local"
[workload]
duration = 1
[sweep]
mtu = [1500, 9000]
rmem = [4194304]
gro = ["on", "off"]
"""


def test_values_take_sweep_parameters():
    text = BASE + """
[knobs]
"sysctl:net.ipv4.tcp_rmem" = "4096 131072 {rmem}"
"mtu@lo" = "{mtu}"
"offload:gro@lo" = "{gro}"
"cc" = "bbr"
[knobs.hosts]
"mtu@lo" = ["server"]
"""
    study = parse_study(text)
    rps = expand_and_check(study, text)
    assert len(rps) == 4
    k = rps[3].extra["knobs"]
    assert k["mtu@lo"] == 9000 and k["offload:gro@lo"] == "off" and k["sysctl:net.ipv4.tcp_rmem"] == "4096 131072 4194304"
    assert k["hosts"] == {"mtu@lo": ["server"]}


def test_key_grammar():
    k = parse_key("offload:gro@eth0")
    assert (k.kind, k.arg, k.device) == ("offload", "gro", "eth0")
    assert parse_key("sysctl:net.ipv4.conf.all.rp_filter").arg == "net.ipv4.conf.all.rp_filter"
    for bad, msg in [
        ("mtux", "did you mean 'mtu'"),
        ("offload", "needs a name"),
        ("mtu:9000", "takes no"),
        ("cc@eth0", "not per interface"),
        ("mitigations", "never changed automatically"),
        ("cmdline", "needs a name after ':', e.g. 'cmdline:mitigations'"),  # cmdline:KEY is a kind now (issue 13)
        ("grub", "never changed automatically"),
    ]:
        with pytest.raises(ValueError, match=msg):
            parse_key(bad)


@pytest.mark.parametrize(
    "knobs, field, msg",
    [
        ('"mtux" = 9000', "knobs", "unknown knob kind 'mtux'"),
        ('"mitigations" = "off"', "knobs", "never changed automatically"),
        ('"command:x" = "1"', "knobs", "a command knob is a table"),
        ('"mtu@lo" = 9000\n[knobs.hosts]\n"mtu@lo" = ["nobody"]', "knobs", None),
        ('"mtu" = {value = 1}', "knobs", "got dict"),
        # the sysctl denylist is checked when the file is read (issue 33; it was at precheck)
        ('"sysctl:kernel.randomize_va_space" = 0', "knobs", "never changed automatically"),
        ('"sysctl:kernel.panic" = 0', "knobs", "never changed automatically"),
    ],
)
def test_bad_knobs_fail_at_load_with_the_field(knobs, field, msg):
    text = BASE + "[knobs]\n" + knobs + "\n"
    try:
        study = parse_study(text, "s.toml")
        precheck(study, make_target(study), expand_and_check(study, text), text, "s.toml")
    except SpecError as e:
        assert str(e).startswith("s.toml") and e.field.startswith(field)
        assert "\n" not in str(e)
        if msg:
            assert msg in str(e)
        return
    pytest.fail("no error")


@pytest.mark.parametrize(
    "knob, msg, at_load",
    [
        ('"sysctl:net.nonexistent.knob" = 1', "no sysctl net.nonexistent.knob", False),  # the host tells
        ('"sysctl:net.ipv4.tcp_rmem" = "4096 131072"', "expected 3 whole numbers", False),
        ('"mtu" = 9000', "has no default interface", True),  # the rest is known from the file alone
        ('"rps@lo" = "zz"', "hex CPU mask", True),
        ('"qdisc@lo" = "fq dev eth0"', "nettune adds dev and root", True),
        ('"offload:gro@lo" = "maybe"', "expected on or off", True),
        ('"irq_affinity:1x" = "0"', "IRQ number", True),
        ('"cc" = "not-a-cc!"', "not a congestion control", True),
    ],
)
def test_bad_values_fail_before_anything_changes(knob, msg, at_load):
    text = BASE + "[knobs]\n" + knob + "\n"
    with pytest.raises(SpecError) as err:
        study = parse_study(text, "s.toml")
        assert not at_load, "refused only by the precheck: the dry run would not refuse it"
        precheck(study, make_target(study), expand_and_check(study, text), text, "s.toml")
    key = knob.split('"')[1]
    assert err.value.field == f"knobs.{key}", str(err.value)
    assert msg in str(err.value)
    assert err.value.line == text.splitlines().index(knob) + 1  # points at the line in the file
