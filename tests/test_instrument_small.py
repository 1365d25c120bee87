"""Smaller items of issue 30: the direction as one sweepable value (`mode`)."""
import pytest

from nettune import SpecError, parse_study
from nettune.engines import get_engine
from nettune.plan.points import expand_and_check

SWEPT = """
name = "modes"
[target]
kind = "local"
[workload]
engine = "{engine}"
mode = "{mode}"
[sweep]
engine = ["iperf3", "iperf2"]
mode = ["forward", "reverse", "bidir"]
"""
FLAG = {"iperf3": {"reverse": "-R", "bidir": "--bidir"}, "iperf2": {"reverse": "-R", "bidir": "--full-duplex"}}


def test_mode_sweeps_the_direction_as_one_parameter():
    seen = set()
    for rp in expand_and_check(parse_study(SWEPT)):
        e, mode = rp.point.params["engine"], rp.point.params["mode"]
        argv = get_engine(e).client_argv(rp.workload, "127.0.0.1", 5201, "3.12" if e == "iperf3" else "2.1.8")
        assert (rp.workload.reverse, rp.workload.bidir) == (mode == "reverse", mode == "bidir")
        for m, flag in FLAG[e].items():
            assert (flag in argv) == (mode == m), (e, mode, argv)
        seen.add((e, mode))
    assert len(seen) == 6


@pytest.mark.parametrize("extra", ['reverse = true', 'bidir = true'])
def test_mode_with_reverse_or_bidir_is_refused_naming_the_field(extra):
    text = f'name = "m"\n[target]\nkind = "local"\n[workload]\nmode = "forward"\n{extra}\n'
    with pytest.raises(SpecError, match="mode and reverse/bidir: give one"):
        parse_study(text)


def test_mode_outside_its_values_is_refused():
    with pytest.raises(SpecError, match="workload.mode"):
        parse_study('name = "m"\n[target]\nkind = "local"\n[workload]\nmode = "sideways"\n')
