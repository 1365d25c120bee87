"""The point-count guard (--max-points) and the expected time (--dry-run prints it, `run`
refuses more than 72 hours without --allow-long): issue 8, item 2."""
from __future__ import annotations

from typing import Any

import pytest

from nettune.errors import SpecError
from nettune import load_study, parse_study

from bad_input_util import Place, assert_one_line_error, base_study, check_rejected_study, our_namespaces, to_toml


def test_point_count_is_refused_before_anything_is_expanded(monkeypatch):
    import nettune.plan.points as points

    def no(*a: Any, **k: Any) -> None:
        raise AssertionError("the sweep was expanded before the point count was checked")

    monkeypatch.setattr(points, "expand", no)
    doc = base_study()
    doc["sweep"] = {"a": list(range(5000)), "b": list(range(5000))}
    with pytest.raises(SpecError, match=r"25,000,000 points \(5000 x 5000 values\) is more than the limit of 10,000; .*--max-points 25000000"):
        parse_study(to_toml(doc), "s.toml")
    line = check_rejected_study(to_toml(doc))
    assert "sweep: 25,000,000 points" in line


def test_max_points_library_and_cli():
    doc = base_study()
    doc["sweep"] = {"queues": [1, 2, 3], "mult": [1, 2, 3, 4], "streams": "{queues} * {mult}"}
    text = to_toml(doc)
    assert len(points_of(parse_study(text, "s.toml"))) == 12  # default limit: 10,000
    with pytest.raises(SpecError, match="12 points"):
        parse_study(text, "s.toml", max_points=11)
    place = Place()
    try:
        path = place.file(text)
        assert load_study(path, max_points=12).name == "h1-fuzz"
        assert "--max-points 12" in assert_one_line_error(place.invoke("run", str(path), "--dry-run", "--max-points", "11"), str(path))
        r = place.invoke("run", str(path), "--dry-run", "--max-points", "12")
        assert r.exit_code == 0 and "12 points x 1 runs = 12 tests" in r.stdout
        place.nothing_created()
    finally:
        place.close()


def points_of(study: Any) -> list[Any]:
    from nettune.plan.points import expand

    return expand(study)


def test_a_plan_longer_than_72_hours_needs_allow_long():
    doc = base_study()
    doc["workload"]["duration"] = 86400  # 4 points x 1 day
    place = Place()
    try:
        path = place.file(to_toml(doc))
        r = place.invoke("run", str(path), "--dry-run", "--db", str(place.db))
        assert r.exit_code == 0 and "expected time: about 4d00h" in r.stdout and "--allow-long" in r.stdout
        before = our_namespaces()
        line = assert_one_line_error(place.invoke("run", str(path), "--db", str(place.db)), str(path))
        assert "about 4d00h, more than 72 hours" in line and "--allow-long" in line
        place.nothing_created()
        assert our_namespaces() <= before
    finally:
        place.close()


def test_expected_time_of_adaptive_repeats_and_pairs():
    from nettune.plan.points import expand_and_check
    from nettune.commands.eta import describe, human_seconds, plan_seconds

    doc = base_study()
    doc["repeat"] = {"min_runs": 3, "max_runs": 5, "target_margin": 0.05, "pause": 1}
    study = parse_study(to_toml(doc), "s.toml")
    low, high = plan_seconds(study, expand_and_check(study))
    assert low == pytest.approx(4 * 3 * 2.6 + (12 - 1) * 1)  # 4 points x 3 runs x (2 s + overhead) + pauses
    assert high == pytest.approx(4 * 5 * 2.6 + (20 - 1) * 1)
    assert "up to" in describe(study, expand_and_check(study))
    doc = base_study() | {"target": {"kind": "lab", "hosts": ["a", "b", "c", "d"]}, "sweep": {}}
    doc["workload"] = {"duration": 10, "pairs": "mesh"}
    sequential = parse_study(to_toml(doc), "s.toml")
    doc["workload"]["parallel_pairs"] = True
    rounds = parse_study(to_toml(doc), "s.toml")
    assert plan_seconds(sequential, expand_and_check(sequential))[0] == pytest.approx(6 * 10.6)  # 6 pairs one after another
    assert plan_seconds(rounds, expand_and_check(rounds))[0] == pytest.approx(3 * 10.6)  # 3 rounds of 2 pairs at once
    assert [human_seconds(s) for s in (45, 725, 12000, 3 * 86400 + 7200, 4e9)] == ["45s", "12m05s", "3h20m", "3d02h", "126.8 years"]


