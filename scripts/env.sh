# Sourced by scripts/demo.sh and scripts/test.sh: the system tools nettune and its tests call,
# then a virtualenv in .venv with nettune installed (editable). Idempotent and quick when
# everything is already there. Run as root (a new machine or container often has no sudo).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "$(id -u)" != 0 ]; then
  echo "nettune's lab uses network namespaces and needs root: run this as root (sudo bash $0 where sudo exists)" >&2
  exit 2
fi
# Every command the code or the tests run on this machine. The package lists below must name
# a package for each; tests/test_setup_tools.py keeps them in step with nettune/setup_tools.py
# (TOOLS, and TEST_TOOLS: grub-mkconfig and grub-editenv, the boot loader's own readings the
# cmdline:KEY tests check edits against, neither installing a boot loader). PostgreSQL's server,
# which only the store tests start, is installed by scripts/test.sh beside the suite, with the
# tests that need it (setup_tools.PG_TEST_TOOLS).
need_pkgs=""
# type -P: the program on PATH (bash's own `time` keyword is not GNU time)
for t in iperf3 iperf ethtool sshd ssh ssh-keygen ip tc sudo ps sysctl pgrep ping nft time grub-mkconfig grub-editenv; do
  type -P "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || need_pkgs=1
done
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_pkgs=1
if [ -n "$need_pkgs" ]; then
  if command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive   # iperf3's debconf must not ask to start a daemon
    apt-get update -q >/dev/null
    apt-get install -y -q iperf3 iperf ethtool openssh-server openssh-client iproute2 procps sudo iputils-ping nftables time python3-venv grub-common grub2-common >/dev/null
  elif command -v dnf >/dev/null; then
    dnf install -y -q iperf3 iperf ethtool openssh-server openssh-clients iproute iproute-tc procps-ng sudo iputils nftables time python3 grub2-tools grub2-tools-minimal
  else
    echo "install iperf3, iperf, ethtool, openssh-server, openssh-client, iproute2, procps, sudo, ping (iputils), nftables and GNU time with your package manager" >&2
    exit 2
  fi
fi
if [ ! -x .venv/bin/nettune ] || [ pyproject.toml -nt .venv/.installed ]; then
  # system site-packages: reuse scipy/pandas/matplotlib wheels already on the machine
  python3 -m venv --system-site-packages .venv
  .venv/bin/pip install -q --disable-pip-version-check -e ".[test]"
  touch .venv/.installed
fi
export PATH="$PWD/.venv/bin:$PATH"
