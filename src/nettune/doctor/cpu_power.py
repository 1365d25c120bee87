"""CPU frequency, power and speculation: what decides how fast a core runs during a test.

Sources of truth: kernel Documentation/admin-guide/pm/{cpufreq,intel_pstate,amd-pstate,
cpuidle}.rst, ABI/testing/sysfs-devices-system-cpu, hw-vuln/*.rst, tuned-adm(8).
"""
from __future__ import annotations

import re
from collections import Counter

from ..knobs.cpu_files import natural_key
from .base import Check, Finding, HostView, cannot

BASE = "/sys/devices/system/cpu/"
CPUFREQ = BASE + "cpu*/cpufreq/"


def per_file(values: dict[str, str]) -> str:
    """"cpu0/cpufreq/scaling_governor=schedutil ..." (each CPU's own value, for the revert text)."""
    return " ".join(f"{p.removeprefix(BASE)}={v}" for p, v in sorted(values.items(), key=lambda kv: natural_key(kv[0])))


def _cmdline_fix(arg: str) -> tuple[str, str]:
    fix = (f"add {arg} to the kernel command line: grubby --update-kernel=ALL --args={arg} (Fedora/RHEL), or "
           f"GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub + update-grub (Debian/Ubuntu, Proxmox with GRUB), or "
           f"/etc/kernel/cmdline + proxmox-boot-tool refresh (Proxmox with systemd-boot); reboot")
    key = arg.split("=")[0]
    return fix, f"remove {key}= again the same way (grubby --update-kernel=ALL --remove-args={key}); reboot"


class CpuDriver(Check):
    id, title, per_machine = "cpu.driver", "CPU frequency driver and mode", True
    source = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver, .../amd_pstate/status, .../intel_pstate/status, /proc/cpuinfo vendor_id"

    def run(self, h: HostView) -> list[Finding]:
        got = h.get(BASE + "cpu0/cpufreq/scaling_driver")
        if not got.known:
            return [cannot(self.id, h.name, "the CPU frequency driver", got)]
        drv = got.text
        info = h.get("/proc/cpuinfo")
        vendor = re.search(r"^vendor_id\s*:\s*(\S+)", info.text or "", re.M)
        amd = bool(vendor and vendor.group(1) == "AuthenticAMD")
        if drv is None:
            return [Finding(self.id, h.name, "info", "this host exposes no CPU frequency scaling (no cpufreq in sysfs: a VM, or disabled in firmware)",
                            f"{BASE}cpu0/cpufreq/scaling_driver: absent", "the hypervisor or firmware decides the clock; tune it there")]
        if drv == "acpi-cpufreq" and not info.known:
            return [cannot(self.id, h.name, "whether acpi-cpufreq runs on an AMD CPU (amd-pstate would be better there)", info)]
        amd_mode = h.read(BASE + "amd_pstate/status")
        intel_mode = h.read(BASE + "intel_pstate/status")
        ev = f"{BASE}cpu0/cpufreq/scaling_driver: {drv}" + (f"; amd_pstate/status: {amd_mode}" if amd_mode else "") + (f"; intel_pstate/status: {intel_mode}" if intel_mode else "")
        if drv == "acpi-cpufreq" and amd:
            fix, revert = _cmdline_fix("amd_pstate=active")
            return [Finding(self.id, h.name, "warn", "acpi-cpufreq on an AMD CPU (amd-pstate not in use)", ev,
                            "acpi-cpufreq offers a few fixed P-states; amd-pstate (CPPC) lets the CPU pick any frequency (study C)", fix, revert)]
        if amd_mode in ("passive", "guided"):
            return [Finding(self.id, h.name, "info", f"amd-pstate in {amd_mode} mode (driver {drv})", ev,
                            "active mode (amd-pstate-epp) lets energy_performance_preference steer the CPU",
                            f"echo active > {BASE}amd_pstate/status", f"echo {amd_mode} > {BASE}amd_pstate/status",
                            {"key": "amd_pstate:mode", "value": "active"})]
        return [Finding(self.id, h.name, "info", f"frequency driver {drv}" + (f" ({amd_mode or intel_mode} mode)" if (amd_mode or intel_mode) else ""), ev)]


class PerCpuFile(Check):
    """A per-CPU cpufreq file that should read `want` on every CPU for measuring; the fix
    writes it on each CPU, and the revert writes each CPU's own value back."""

    per_machine = True
    file, want, label, why, knob, alternative = "", "performance", "", "", "", ""  # knob: the cpufreq:ARG kind that fixes it

    def note(self, h: HostView) -> str:
        return ""

    def unit(self, n: int) -> str:
        return ""

    def run(self, h: HostView) -> list[Finding]:
        got = h.files(CPUFREQ + self.file)
        if not got.known:
            drv = h.get(BASE + "cpu0/cpufreq/scaling_driver")
            if drv.absent:
                return []  # no cpufreq at all: cpu.driver says so
            return [cannot(self.id, h.name, f"the {self.label} of the CPUs", got)]
        values = got.texts
        if not values:
            return []
        count = Counter(values.values())
        if set(count) == {self.want}:
            return [Finding(self.id, h.name, "info", f"{self.label} {self.want} on all {len(values)} CPUs", f"{CPUFREQ}{self.file}: {self.want}")]
        seen = ", ".join(f"{v} on {n}{self.unit(n)}" for v, n in count.most_common())
        return [Finding(self.id, h.name, "warn", f"{self.label} {seen}", f"{CPUFREQ}{self.file}: {seen}", self.why + self.note(h),
                        f"for f in {CPUFREQ}{self.file}; do echo {self.want} > $f; done" + self.alternative,
                        "write back each CPU's value: " + per_file(values)[:200],
                        {"key": f"cpufreq:{self.knob}", "value": self.want})]


class CpuGovernor(PerCpuFile):
    id, title = "cpu.governor", "Scaling governor of every CPU"
    source = "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"
    file, label, knob, alternative = "scaling_governor", "governor", "governor", "   (or: cpupower frequency-set -g performance)"
    why = "a governor other than performance lets the clock drop between tests and ramp during them: more noise, lower peaks"

    def unit(self, n: int) -> str:
        return f" CPU{'s' if n > 1 else ''}"


class CpuEpp(PerCpuFile):
    id, title = "cpu.epp", "Energy-performance preference (EPP)"
    source = "/sys/devices/system/cpu/cpu*/cpufreq/energy_performance_preference (intel_pstate with HWP, amd-pstate-epp)"
    file, label, knob = "energy_performance_preference", "EPP", "epp"
    why = "a power-leaning EPP makes the CPU clock up late under load"

    def note(self, h: HostView) -> str:
        govs = set(h.files(CPUFREQ + "scaling_governor").texts.values())
        return " (set it after the governor: with governor performance the driver pins EPP)" if "performance" in govs else ""


class Tuned(Check):
    id, title, per_machine = "cpu.tuned", "tuned profile and its verification", True
    source = "tuned-adm active, tuned-adm verify (exit 0 ok, 1 mismatch); /var/log/tuned/tuned.log"
    CALM = ("balanced", "powersave", "desktop", "laptop-battery-powersave", "laptop-ac-powersave")

    def run(self, h: HostView) -> list[Finding]:
        w = h.which("tuned-adm")
        if w.absent:
            return [Finding(self.id, h.name, "info", "tuned is not installed", "tuned-adm: not on PATH")]
        r = h.cmd(["tuned-adm", "active"])
        if not r.known:
            return [cannot(self.id, h.name, "whether a tuned profile is active", w, r)]
        m = re.search(r"Current active profile:\s*(.+)", r.stdout)
        profile = " ".join(m.group(1).split()) if m else "off"
        out = []
        ev = f"tuned-adm active: {profile}"
        if profile.split()[0] in self.CALM:
            out.append(Finding(self.id, h.name, "warn", f"tuned profile {profile}", ev,
                               "a power-saving profile lowers clocks and allows deep C-states while you measure (study C)",
                               "tuned-adm profile throughput-performance", f"tuned-adm profile {profile}",
                               {"key": "tuned", "value": "throughput-performance"}))
        else:
            out.append(Finding(self.id, h.name, "info", f"tuned profile {profile}", ev))
        if profile != "off":
            v = h.first(["tuned-adm", "verify", "--ignore-missing"], ["tuned-adm", "verify"])
            lines = [ln.strip() for ln in (v.stdout + v.stderr).splitlines() if ln.strip()]
            said = lines[0][:200] if lines else "no output"  # tuned-adm's verdict line; the details are in its log
            # a sosreport keeps the text, not the exit code: its verdict line says it
            failed = v.known and (v.rc != 0 or "Verification failed" in v.stdout)
            if not v.known:
                out.append(cannot(self.id, h.name, f"whether profile {profile} is fully in force (tuned-adm verify)", v))
            elif failed:
                out.append(Finding("cpu.tuned", h.name, "problem", f"tuned-adm verify fails for {profile}: the profile is not fully in force",
                                   f"tuned-adm verify: exit {v.rc}: {said}",
                                   "some settings of the profile were changed behind tuned's back; the numbers are not those of the profile",
                                   f"tuned-adm profile {profile}   (re-applies it; the log /var/log/tuned/tuned.log lists what differed)", ""))
        return out


class Smt(Check):
    id, title, per_machine = "cpu.smt", "Simultaneous multithreading", True
    source = "/sys/devices/system/cpu/smt/control, smt/active"

    def run(self, h: HostView) -> list[Finding]:
        got = h.get(BASE + "smt/control")
        if not got.known:
            return [cannot(self.id, h.name, "whether SMT is on", got)]
        control = got.text
        if control is None or control in ("notsupported", "notimplemented"):
            return []
        active = h.read(BASE + "smt/active")
        return [Finding(self.id, h.name, "info", f"SMT {control} (active {active})", f"{BASE}smt/control: {control}; smt/active: {active}",
                        "with SMT on, two threads share one core: per-core CPU figures count threads, and a pegged thread may have a busy sibling")]


class Mitigations(Check):
    id, title, per_machine = "cpu.mitigations", "Speculative-execution mitigations", True
    source = "/sys/devices/system/cpu/vulnerabilities/*, /proc/cmdline (mitigations=)"

    def run(self, h: HostView) -> list[Finding]:
        got = h.files(BASE + "vulnerabilities/*")
        if not got.known:
            return [cannot(self.id, h.name, "the speculative-execution mitigations", got)]
        vul = got.texts
        if not vul:
            return []
        state = Counter("not affected" if v.startswith("Not affected") else "vulnerable" if v.startswith("Vulnerable") else "mitigated" for v in vul.values())
        cmdline = h.get("/proc/cmdline")
        cmd = re.search(r"(?:^|\s)mitigations=(\S+)", cmdline.text or "")
        mode = cmd.group(1) if cmd else "auto (default)" if cmdline.text is not None else "? (kernel command line not read)"
        seen = f"mitigations={mode}: " + ", ".join(f"{n} {s}" for s, n in state.most_common())
        open_ = sorted(p.rsplit("/", 1)[1] for p, v in vul.items() if v.startswith("Vulnerable"))
        fix, revert = _cmdline_fix("mitigations=off")
        return [Finding(self.id, h.name, "info", seen + (f" ({', '.join(open_[:6])})" if open_ else ""),
                        f"{BASE}vulnerabilities/ ({len(vul)} files); /proc/cmdline mitigations={mode}",
                        "mitigations cost CPU on every syscall and context switch; compare hosts only with the same setting (study C measures the cost)",
                        fix + " (only to measure their cost: it removes protections)", revert)]


class CState(Check):
    id, title, per_machine = "cpu.cstate", "Deepest idle state enabled", True
    source = "/sys/devices/system/cpu/cpu*/cpuidle/state*/{name,latency,disable}"
    DEEP_US = 50  # exit latency above this adds visibly to a ping-pong RTT at low load

    def run(self, h: HostView) -> list[Finding]:
        got = h.files(BASE + "cpu0/cpuidle/state*/name")
        if not got.known:
            return [cannot(self.id, h.name, "the CPU idle states", got)]
        names = got.texts
        if not names:
            return []
        lat = h.files(BASE + "cpu0/cpuidle/state*/latency").texts
        dis = h.files(BASE + "cpu0/cpuidle/state*/disable").texts
        states = []
        for p, name in names.items():
            d = p.rsplit("/", 1)[0]
            states.append((int(lat.get(d + "/latency", "0") or 0), name, dis.get(d + "/disable", "0") == "0", d))
        enabled = sorted(s for s in states if s[2])
        if not enabled:
            return [Finding(self.id, h.name, "info", "every idle state disabled", f"{BASE}cpu0/cpuidle/state*/disable: 1")]
        deepest = enabled[-1]
        ev = f"{BASE}cpu0/cpuidle: " + ", ".join(f"{n} {lt} µs{'' if on else ' (disabled)'}" for lt, n, on, _ in sorted(states))
        if deepest[0] <= self.DEEP_US:
            return [Finding(self.id, h.name, "info", f"deepest idle state {deepest[1]} ({deepest[0]} µs exit latency)", ev)]
        shallow = [int(p.rsplit("state", 1)[1]) for lt, _, _, p in states if lt <= self.DEEP_US]
        return [Finding(self.id, h.name, "warn", f"deepest idle state {deepest[1]} enabled ({deepest[0]} µs exit latency)", ev,
                        "waking from a deep C-state adds its exit latency to latency tests and to the first packets of a burst",
                        f"disable states above {self.DEEP_US} µs on every CPU (echo 1 > .../cpuidle/stateN/disable), or tuned's latency-performance profile",
                        "echo 0 > the same files",
                        {"key": "cpuidle:max_state", "value": max(shallow)} if shallow else None)]


CHECKS = (CpuDriver(), CpuGovernor(), CpuEpp(), Tuned(), Smt(), Mitigations(), CState())
