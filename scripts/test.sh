#!/usr/bin/env bash
# Install what the tests need, then run them (real iperf3/iperf2, namespaces, sshd, SQLite).
source "$(dirname "$0")/env.sh"
if command -v apt-get >/dev/null && ! command -v chromium >/dev/null; then
  apt-get install -y -q chromium >/dev/null || echo "chromium not installed: the report rendering test will skip" >&2
fi
python -m pytest -q -p no:cacheprovider "$@"
