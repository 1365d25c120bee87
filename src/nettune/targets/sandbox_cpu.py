"""The sandbox's model of the CPU power stack (FOR TESTS ONLY: targets/sandbox.py), so
that tuned x amd_pstate can be tested without an AMD machine or a tuned daemon.

- `tuned-adm` (active, list, profile NAME, off) on the host's tree: profiles are
  DIR/<host>/usr/lib/tuned/<name>/tuned.conf, the active one DIR/<host>/etc/tuned/active_profile
  (tuned's own file). `profile` applies the profile's [cpu] plugin as tuned's does
  (tuned/plugins/plugin_cpu.py): `governor` (alternatives split by '|', the first one in
  scaling_available_governors) to every CPU's scaling_governor, and
  `energy_performance_preference` (the first available one) to every CPU that has
  energy_performance_available_preferences. `include=` and the other plugins are not
  modelled. Only a tree that holds usr/lib/tuned has tuned; elsewhere tuned-adm is "not
  found" (exit 127).
- A write of a different mode to amd_pstate/status re-registers the driver, as the kernel
  does (Documentation/admin-guide/pm/amd-pstate.rst, `status`: the driver "switch[es]
  over" to that mode): every CPU gets a new policy with the driver's defaults, whatever a
  profile had written. Modelled defaults: active (amd-pstate-epp) offers the performance
  and powersave governors, starts on powersave with EPP balance_performance; passive and
  guided (amd-pstate) offer the generic governors, start on schedutil, and have no EPP
  files. These defaults are a model: on real hardware they follow the kernel's
  configuration and the firmware, and were not verified here.
"""
from __future__ import annotations

import configparser
import re
from pathlib import Path

from .base import CommandResult

CPU = "sys/devices/system/cpu/"
STATUS = "/sys/devices/system/cpu/amd_pstate/status"
PROFILES = "usr/lib/tuned"
ACTIVE = "etc/tuned/active_profile"
EPP_PREFS = "default performance balance_performance balance_power power"
MODES = {  # mode -> (scaling_driver, available governors, default governor, default EPP or None)
    "active": ("amd-pstate-epp", "performance powersave", "powersave", "balance_performance"),
    "passive": ("amd-pstate", "conservative ondemand userspace powersave performance schedutil", "schedutil", None),
    "guided": ("amd-pstate", "conservative ondemand userspace powersave performance schedutil", "schedutil", None),
}


def cpus(root: Path) -> list[Path]:
    """Every cpuN/cpufreq directory of the tree."""
    return sorted((p / "cpufreq" for p in (root / CPU).glob("cpu*") if re.fullmatch(r"cpu\d+", p.name) and (p / "cpufreq").is_dir()),
                  key=lambda p: int(p.parent.name[3:]))


def switch_mode(root: Path, mode: str) -> None:
    """The driver registered again in `mode`: each CPU's policy back to its defaults."""
    if mode not in MODES:
        return
    driver, governors, governor, epp = MODES[mode]
    for d in cpus(root):
        (d / "scaling_driver").write_text(driver + "\n")
        (d / "scaling_available_governors").write_text(governors + "\n")
        (d / "scaling_governor").write_text(governor + "\n")
        for name, text in (("energy_performance_preference", epp), ("energy_performance_available_preferences", EPP_PREFS if epp else None)):
            if text is None:
                (d / name).unlink(missing_ok=True)
            else:
                (d / name).write_text(text + "\n")


def tuned_adm(root: Path, argv: list[str]) -> CommandResult:
    """`tuned-adm ARGS` on the tree (see the module's docstring)."""
    profiles = root / PROFILES
    if not profiles.is_dir():
        return CommandResult(argv, 127, "", "tuned-adm: command not found")
    names = sorted(p.name for p in profiles.iterdir() if (p / "tuned.conf").is_file())
    active_file = root / ACTIVE
    active = active_file.read_text().strip() if active_file.exists() else ""
    current = f"Current active profile: {active}\n" if active else "No current active profile.\n"
    args = argv[1:]
    if args == ["active"]:
        return CommandResult(argv, 0, current, "")
    if args == ["list"]:
        return CommandResult(argv, 0, "Available profiles:\n" + "".join(f"- {n:<30}- {n}\n" for n in names) + current, "")
    if args == ["off"]:
        active_file.parent.mkdir(parents=True, exist_ok=True)
        active_file.write_text("")
        return CommandResult(argv, 0, "", "")
    if len(args) == 2 and args[0] == "profile":
        if args[1] not in names:
            return CommandResult(argv, 1, "", f"Requested profile '{args[1]}' doesn't exist.\n")
        _apply_cpu(root, profiles / args[1] / "tuned.conf")
        active_file.parent.mkdir(parents=True, exist_ok=True)
        active_file.write_text(args[1] + "\n")
        return CommandResult(argv, 0, "", "")
    return CommandResult(argv, 1, "", f"tuned-adm {' '.join(args)}: not emulated by the nettune sandbox")


def _apply_cpu(root: Path, conf: Path) -> None:
    """A profile's [cpu] governor and energy_performance_preference, as tuned's cpu plugin writes them."""
    cp = configparser.ConfigParser()
    cp.read(conf)
    if not cp.has_section("cpu"):
        return
    for d in cpus(root):
        for option, target, offered in (("governor", "scaling_governor", "scaling_available_governors"),
                                        ("energy_performance_preference", "energy_performance_preference",
                                         "energy_performance_available_preferences")):
            want = cp.get("cpu", option, fallback=None)
            if want is None or not (d / offered).exists():
                continue
            avail = (d / offered).read_text().split()
            pick = next((w.strip() for w in want.split("|") if w.strip() in avail), None)
            if pick is not None:
                (d / target).write_text(pick + "\n")
