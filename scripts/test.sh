#!/usr/bin/env bash
# Install what the tests need, then run them (real iperf3/iperf2, namespaces, sshd, SQLite).
# Run as root: the lab creates network namespaces.
source "$(dirname "$0")/env.sh"
if ! command -v chromium >/dev/null; then   # renders report.html to check it (tests/test_report.py)
  if command -v apt-get >/dev/null; then
    apt-get install -y -q chromium >/dev/null
  elif command -v dnf >/dev/null; then
    dnf install -y -q chromium
  fi
fi
# The VM lab's tests (tests/test_vmlab.py) boot QEMU guests: QEMU, libvirt, busybox-static and
# GRUB from Debian's packages, libvirt's libvirt-qemu user, and the guest image, built once into
# /var/cache/nettune/vmlab (`nettune setup --vms`; quick when all is there). Where it cannot
# (no apt-get), those tests skip and say why.
if command -v apt-get >/dev/null; then
  nettune setup --vms | tail -n 1 || echo "nettune setup --vms failed: tests/test_vmlab.py says why it skips" >&2
fi
python -m pytest -q -p no:cacheprovider "$@"
