"""The study file: what is accepted, and a clear one-line error for everything else."""
import json

import pytest

from nettune.errors import SpecError
from nettune.plan import expand, resolve, schedule
from nettune import load_study, parse_study
from nettune.studyfile.expr import ExprError, evaluate, fill
from nettune.studyfile.models import json_schema

from conftest import EXAMPLES

BASE = """
name = "t"
[target]
kind = "lab"
queues = "{queues}"
[workload]
duration = 2
parallel = "{streams}"
[sweep]
queues = [1, 2]
mult = [1, 2]
streams = "{queues} * {mult}"
"""


def err(text: str) -> SpecError:
    with pytest.raises(SpecError) as e:
        parse_study(text, "s.toml")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("s.toml")
    return e.value


def test_quick_example_expands_to_six_points():
    s = load_study(EXAMPLES / "quick.toml")
    pts = expand(s)
    assert [(p.params["queues"], p.params["streams"]) for p in pts] == [(1, 1), (1, 2), (1, 4), (2, 2), (2, 4), (2, 8)]
    r = resolve(s, pts[4])
    assert r.target.queues == 2 and r.workload.parallel == 4 and r.target.mtu == 9000
    assert s.workload.engine == "auto"  # the demo measures the path, not iperf3's one thread (issue 34)


def test_demo_data_is_the_example():
    from importlib import resources

    assert resources.files("nettune").joinpath("data/quick.toml").read_text() == (EXAMPLES / "quick.toml").read_text()


def test_every_example_loads():
    for f in EXAMPLES.glob("*.toml"):
        # ssh-lab, bastion-lab: need the lab files (tests/test_examples.py runs them); study-c: needs the
        # boot-time cmdline: knob kind and allow_reboot (issue 13's boot-time part) and real hosts
        if f.name not in ("ssh-lab.toml", "bastion-lab.toml"):
            load_study(f)


def test_unknown_key_names_line_and_suggests():
    e = err(BASE.replace("duration = 2", "duraton = 2"))
    assert e.field == "workload.duraton" and e.line == 7 and "did you mean 'duration'" in str(e)


def test_wrong_type_names_field():
    e = err(BASE.replace('queues = "{queues}"', 'queues = "many"'))
    assert e.field == "target.queues" and e.line == 5


def test_unknown_parameter_in_sweep_expression():
    e = err(BASE.replace("{queues} * {mult}", "{queues} * {mul}"))
    assert e.field == "sweep.streams" and "mul" in str(e)


def test_unknown_parameter_in_template():
    e = err(BASE.replace('parallel = "{streams}"', 'parallel = "{stream}"'))
    assert "stream" in str(e)


def test_expression_value_checked_per_point():
    e = err(BASE.replace("{queues} * {mult}", "{queues} - 1"))
    assert "parallel" in e.field and "queues=1" in str(e)


def test_circular_expressions():
    e = err(BASE.replace("mult = [1, 2]", 'mult = "{streams}"'))
    assert "circular" in str(e)


def test_unknown_target_kind():
    e = err(BASE.replace('kind = "lab"', 'kind = "vm"'))
    assert "'vm'" in str(e) and "lab" in str(e)


def test_bad_toml_has_line():
    e = err(BASE + "\n[repeat\nruns = 1\n")
    assert "not valid TOML" in str(e) and e.line


def test_host_must_exist():
    e = err(BASE.replace("duration = 2", 'duration = 2\nserver = "nas"'))
    assert "nas" in str(e)


def test_reverse_and_bidir_exclusive():
    err(BASE.replace("duration = 2", "duration = 2\nreverse = true\nbidir = true"))


def test_missing_file():
    with pytest.raises(SpecError) as e:
        load_study("/nonexistent/x.toml")
    assert "no such file" in str(e.value)


def test_bad_mtu_range():
    err(BASE.replace('queues = "{queues}"', 'queues = "{queues}"\nmtu = 70000'))


def test_expressions_are_not_eval():
    with pytest.raises(ExprError):
        evaluate("__import__('os').system('true')", {})
    with pytest.raises(ExprError):
        evaluate("a.b", {"a": 1})
    assert evaluate("min({a} * 2, 5) // 2", {"a": 4}) == 2


def test_fill_keeps_types_and_formats_text():
    assert fill("{n}", {"n": 4}) == 4
    assert fill("4096 131072 {m}", {"m": 1 << 20}) == "4096 131072 1048576"
    assert fill(["{n}", {"x": "{n}*"}], {"n": 2}) == [2, {"x": "2*"}]


def test_interleaved_is_default_and_warmups_first():
    s = parse_study(BASE + "[repeat]\nruns = 2\nwarmup = 1\n")
    slots = schedule(s, expand(s))
    assert [(sl.point.index, sl.run, sl.warmup) for sl in slots[:5]] == [(0, 0, True), (1, 0, True), (2, 0, True), (3, 0, True), (0, 1, False)]
    s2 = parse_study(BASE + '[repeat]\nruns = 2\norder = "sequential"\n')
    assert [(sl.point.index, sl.run) for sl in schedule(s2, expand(s2))][:3] == [(0, 0), (0, 1), (1, 0)]


def test_shuffled_order_is_reproducible_with_seed():
    text = BASE + '[repeat]\nruns = 3\norder = "shuffled"\nseed = 7\n'
    a = [(x.point.index, x.run) for x in schedule(parse_study(text), expand(parse_study(text)))]
    b = [(x.point.index, x.run) for x in schedule(parse_study(text), expand(parse_study(text)))]
    assert a == b and sorted(a) == sorted((i, r) for i in range(4) for r in range(3))


def test_schema_is_json_and_covers_fields():
    schema = json_schema()
    text = json.dumps(schema)
    for field in ("workload", "sweep", "repeat", "parallel", "queues", "bidir"):
        assert field in text
