"""The install steps name a package for every command nettune and its tests run.

scripts/env.sh installs before nettune exists (so it cannot import the table), and
`nettune setup` installs from nettune.setup_tools.TOOLS: the two must not drift apart, or a
new machine misses a tool (it happened with sudo)."""
import re
import shutil
from pathlib import Path

from nettune.setup_tools import PG_TEST_TOOLS, TEST_TOOLS, TOOLS, missing_tools

ROOT = Path(__file__).resolve().parent.parent


def _install_lines(manager: str) -> set[str]:
    text = (ROOT / "scripts" / "env.sh").read_text()
    pkgs: set[str] = set()
    for line in text.splitlines():
        m = re.search(rf"\b{manager} install -y -q (.*?)(?:>|$)", line)
        if m:
            pkgs |= set(m.group(1).split())
    return pkgs


def test_env_sh_installs_every_package_of_the_tools_table():
    apt, dnf = _install_lines("apt-get"), _install_lines("dnf")
    assert apt and dnf
    for tool, (deb, rpm) in (TOOLS | TEST_TOOLS).items():
        assert deb in apt, f"scripts/env.sh apt-get line lacks {deb} (for {tool})"
        assert rpm in dnf, f"scripts/env.sh dnf line lacks {rpm} (for {tool})"


def test_env_sh_checks_every_tool_of_the_table():
    text = (ROOT / "scripts" / "env.sh").read_text()
    checked = re.search(r"for t in ([^;]+);", text).group(1).split()
    assert set(TOOLS) | set(TEST_TOOLS) <= set(checked), f"env.sh does not check {sorted(set(TOOLS) | set(TEST_TOOLS) - set(checked))}"


def test_missing_tools_reports_what_path_lacks(monkeypatch, tmp_path):
    for t in ("iperf3", "ip"):
        (tmp_path / t).write_text("#!/bin/sh\n")
        (tmp_path / t).chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    missing = missing_tools()
    # /usr/sbin and /sbin are always searched (sshd, ip, tc live there for non-root PATHs)
    expected = {t for t in TOOLS if t not in ("iperf3", "ip") and not shutil.which(t, path="/usr/sbin:/sbin")}
    assert set(missing) == expected


def test_the_test_command_sets_up_the_vm_lab():
    """scripts/test.sh runs `nettune setup --vms` (whose list is setup_tools.VM_TOOLS), so the
    VM lab's tests find QEMU, libvirt, GRUB and the guest image on a new machine."""
    from nettune.setup_tools import VM_FILES, VM_TOOLS

    script = (ROOT / "scripts" / "test.sh").read_text()
    assert "nettune setup --vms" in script
    vm_line = next(part for part in script.split("apt-get install")[1:] if "qemu" in part.split(">/dev/null", 1)[0])
    install = " ".join(ln.strip(" \\") for ln in vm_line.split(">/dev/null", 1)[0].splitlines())
    assert set(VM_TOOLS.values()) | set(VM_FILES.values()) <= set(install.split())  # a new machine gets every one
    assert {"qemu-system-x86", "libvirt-daemon", "libvirt-clients", "busybox-static", "grub2-common"} <= set(VM_TOOLS.values())
    assert {"libvirt-daemon-driver-qemu", "grub-pc-bin"} <= set(VM_FILES.values())


def _beside(script: str) -> list[str]:
    """The test files scripts/test.sh runs in the background shard (its `beside=` list)."""
    return re.search(r'^beside="(.*?)"', script, re.S | re.M).group(1).replace("\\", " ").split()


def test_postgresql_is_installed_in_the_shard_that_runs_its_tests():
    """PostgreSQL's server is installed by the background shard of scripts/test.sh, before its
    pytest, and not by scripts/env.sh (the main shard must not wait for it); every test file
    that starts the throwaway cluster runs in that shard."""
    script = (ROOT / "scripts" / "test.sh").read_text()
    shard = script[script.index("vm_log=$(mktemp"):script.index("vm_pid=$!")]
    pytest_at = shard.index("scripts/isolated.sh python -m pytest")
    for manager, column in (("apt-get", 0), ("dnf", 1)):
        line = re.search(rf"\b{manager} install -y -q ([^>|\n]*)", shard)
        assert line and line.start() < pytest_at, f"scripts/test.sh's background shard has no {manager} line before its pytest"
        assert {pkgs[column] for pkgs in PG_TEST_TOOLS.values()} <= set(line.group(1).split())
    assert "postgresql" not in _install_lines("apt-get") | _install_lines("dnf"), "scripts/env.sh installs PostgreSQL: the main shard waits for it"
    beside = set(_beside(script))
    users = {f"tests/{p.name}" for p in (ROOT / "tests").glob("test_*.py")
             if re.search(r"\bdef test_\w+\([^)]*\bpg_(url|cluster)\b|getfixturevalue\(\"pg_(url|cluster)\"\)", p.read_text())}
    assert users and users <= beside, f"{sorted(users - beside)} start PostgreSQL but run in the main shard"
