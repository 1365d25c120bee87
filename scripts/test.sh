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
python -m pytest -q -p no:cacheprovider --durations=20 "$@"   # the slowest tests in every CI log
