"""One meaning for a rate in a study file: `bitrate = "1G"` is 10^9 bit/s on every engine.

Rates are read once, here, into bits per second: a number with an SI prefix (k, M, G, T;
either case, each a power of 1000) or a binary one (Ki, Mi, Gi, Ti: powers of 1024), or a
plain number of bits per second. Each engine is then handed that integer (`rate_arg`),
the one form both tools read the same way: iperf3 reads K/M/G as powers of 1000 but iperf
2.1.8 reads upper-case K/M/G as powers of 1024 (`-b 1G` sent 2^30 bit/s, 7.4% more), and
both read a plain number as bits per second.
"""
from __future__ import annotations

import re
from typing import Any

RATE_PATTERN = r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(?:([kmgtKMGT])(i?))?\s*$"  # also the JSON Schema's
_RATE = re.compile(RATE_PATTERN)
_POWER = {"k": 1, "m": 2, "g": 3, "t": 4}
MAX_BPS = 10**15  # a petabit per second: past any link, so a typo (1000G) is caught


def parse_rate(value: Any) -> int:
    """'1G' -> 1000000000, '1.5M' -> 1500000, '1Gi' -> 1073741824, 2000 -> 2000 (bit/s).
    ValueError (a sentence) for anything else."""
    if isinstance(value, bool):
        raise ValueError(f"expected a rate such as '1G', '500M' or a number of bits/s, got {str(value).lower()}")
    if isinstance(value, int):
        bps = value
    elif not isinstance(value, str):  # a TOML float (2.5, 1e9): bits/s are whole; a string says its unit
        raise ValueError(f"expected a rate such as '1G', '1.5G' or a whole number of bits/s, got {value!r}")
    else:
        m = _RATE.match(str(value))
        if m is None:
            raise ValueError(f"{value!r} is not a rate: write e.g. '1G' (10^9 bit/s), '500M', '1.5G', '1Gi' (2^30) or a number of bits/s")
        num, prefix, binary = m.groups()
        base = 1024 if binary else 1000
        bps = round(float(num) * base ** _POWER[prefix.lower()]) if prefix else round(float(num))
    if not 0 <= bps <= MAX_BPS:
        raise ValueError(f"{value!r} is out of range: allowed 0 to 1000T bit/s ({MAX_BPS})")
    return int(bps)


def rate_arg(bps: Any) -> str:
    """The rate as both iperf3 and iperf2 read it: a plain integer of bits per second."""
    return str(parse_rate(bps))


def rate_text(bps: float) -> str:
    """1000000000 -> '1G', 1500000 -> '1.5M', 123 -> '123' (SI, for messages)."""
    for prefix, power in (("T", 4), ("G", 3), ("M", 2), ("k", 1)):
        if bps >= 1000**power:
            return f"{bps / 1000**power:g}{prefix}"
    return f"{bps:g}"
