"""One meaning per rate unit (issue 17): `bitrate` is read once into bits per second (SI
prefixes are powers of 1000, Ki/Mi/Gi/Ti of 1024) and each engine gets the plain integer,
the form iperf3 and iperf 2.1.8 both read as bits/s (iperf 2.1.8 reads "1G" as 2^30)."""
import pytest
from pydantic import ValidationError

from nettune.engines import get_engine
from nettune.studyfile.models import Workload
from nettune.studyfile.rates import parse_rate, rate_arg, rate_text


@pytest.mark.parametrize("text,bps", [
    ("1G", 10**9), ("1g", 10**9), ("500M", 5 * 10**8), ("1.5G", 15 * 10**8), ("100k", 10**5), ("100K", 10**5),
    ("2T", 2 * 10**12), ("1Gi", 2**30), ("10Mi", 10 * 2**20), ("64Ki", 65536), ("123456", 123456), (0, 0), (2000, 2000),
    (" 1 G ", 10**9),
])
def test_rates_are_si_unless_binary(text, bps):
    assert parse_rate(text) == bps
    assert Workload(bitrate=text).bitrate == bps


@pytest.mark.parametrize("bad", ["fast", "1X", "-1G", "1G/100", "", "G", True, -5, "1001T", 2.5, 1e9])
def test_bad_rates_are_refused_with_the_forms_that_work(bad):
    with pytest.raises(ValidationError) as e:
        Workload(bitrate=bad)
    assert "rate" in str(e.value) or "out of range: allowed 0 to 1000T" in str(e.value)


def test_a_template_is_left_for_the_point():
    assert Workload(bitrate="{rate}").bitrate == "{rate}"


@pytest.mark.parametrize("engine,version", [("iperf3", "3.12"), ("iperf2", "2.1.8")])
@pytest.mark.parametrize("text", ["1G", 1000000000, "1000M"])
def test_every_engine_gets_1G_as_10_to_the_9_bits(engine, version, text):
    wl = Workload(engine=engine, protocol="udp", bitrate=text)
    argv = get_engine(engine).client_argv(wl, "198.18.0.1", 5201, version)
    assert argv[argv.index("-b") + 1] == "1000000000"


def test_binary_rate_is_handed_over_as_bits():
    wl = Workload(engine="iperf2", bitrate="1Gi")
    argv = get_engine("iperf2").client_argv(wl, "198.18.0.1", 5001, "2.1.8")
    assert argv[argv.index("-b") + 1] == str(2**30)


def test_rate_text_and_arg():
    assert rate_text(10**9) == "1G" and rate_text(1.5e6) == "1.5M" and rate_text(999) == "999"
    assert rate_arg("2.5M") == "2500000"
