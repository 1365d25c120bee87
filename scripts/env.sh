# Sourced by scripts/demo.sh and scripts/test.sh: a virtualenv in .venv with nettune
# installed (editable) and the system tools nettune drives. Idempotent and quick when
# everything is already there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "$(id -u)" != 0 ]; then
  echo "nettune's lab uses network namespaces and needs root: run this with sudo" >&2
  exit 2
fi
need_apt=""
for t in iperf3 iperf ethtool sshd ip tc; do command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || need_apt=1; done
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then need_apt=1; fi
if [ -n "$need_apt" ]; then
  if command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive   # iperf3's debconf must not ask to start a daemon
    apt-get update -q >/dev/null
    apt-get install -y -q iperf3 iperf ethtool openssh-server iproute2 procps python3-venv >/dev/null
  elif command -v dnf >/dev/null; then
    dnf install -y -q iperf3 iperf ethtool openssh-server iproute iproute-tc procps-ng python3
  else
    echo "install iperf3, iperf, ethtool, openssh-server and iproute2 with your package manager" >&2
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
