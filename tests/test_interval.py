"""[workload] interval (issue 19): -i N on both engines, parsed from real outputs captured
with `interval = 2` (tests/fixtures/<tool>/interval2, tests/fixtures/capture.py), stored per
interval; the field's range is iperf3's own."""
from __future__ import annotations

import pytest

from nettune import parse_study
from nettune.engines.iperf2 import Iperf2Engine
from nettune.engines.iperf3 import Iperf3Engine
from nettune.errors import SpecError
from nettune.studyfile.models import Workload

from fixtures_util import FIXTURES, load_capture


@pytest.mark.parametrize("tool,engine", [("iperf3", Iperf3Engine()), ("iperf2", Iperf2Engine())])
def test_interval_2_gives_duration_over_2_intervals_from_real_output(tool, engine):
    wl, client, server, meta = load_capture(FIXTURES / tool, "interval2")
    assert wl.interval == 2 and wl.duration == 6
    # the argv the engine builds today is the one the capture ran
    i = meta["client_argv"].index("-i")
    assert meta["client_argv"][i + 1] == "2"
    res = engine.parse(wl, client, server)
    assert res.ok, res.error
    fwd = [iv for iv in res.intervals if iv.direction == "forward"]
    assert len(fwd) == 3  # 6 s / 2 s
    assert [round(iv.start) for iv in fwd] == [0, 2, 4] and all(abs((iv.end - iv.start) - 2) < 0.1 for iv in fwd)
    assert all(iv.bps > 0 for iv in fwd)


def test_argv_default_and_set():
    wl = Workload.model_validate({"engine": "iperf3"})
    e3, e2 = Iperf3Engine(), Iperf2Engine()
    assert "-i" not in e3.client_argv(wl, "127.0.0.1", 5201, "3.12") and "-i" not in e3.server_argv(wl, 5201, "3.12")
    assert e2.client_argv(wl, "127.0.0.1", 5001, "2.1.8")[-2:] == ["-i", "1"]
    wl = Workload.model_validate({"engine": "iperf2", "interval": 0.5})
    c3 = e3.client_argv(wl, "127.0.0.1", 5201, "3.12")
    assert c3[c3.index("-i") + 1] == "0.5" and "-i" in e3.server_argv(wl, 5201, "3.12")
    c2 = e2.client_argv(wl, "127.0.0.1", 5001, "2.1.8")
    assert c2[c2.index("-i") + 1] == "0.5"


@pytest.mark.parametrize("value,words", [("0.05", "out of range: allowed 0.1 to 60"), ("61", "out of range: allowed 0.1 to 60"),
                                         ("true", "expected a number")])
def test_interval_out_of_range_is_one_line(value, words):
    text = f'name = "nt-i"\n[target]\nkind = "local"\n[workload]\ninterval = {value}\n'
    with pytest.raises(SpecError) as e:
        parse_study(text, "i.toml")
    assert "i.toml:5: workload.interval:" in str(e.value) and words in str(e.value)


def test_interval_from_the_sweep():
    text = 'name = "nt-i"\n[target]\nkind = "local"\n[workload]\ninterval = "{iv}"\n[sweep]\niv = [1, 5]\n'
    parse_study(text, "i.toml")
    with pytest.raises(SpecError) as e:
        parse_study(text.replace("[1, 5]", "[1, 500]"), "i.toml")
    assert "workload.interval" in str(e.value) and "at point iv=500" in str(e.value)
