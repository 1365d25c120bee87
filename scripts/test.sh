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
# The VM lab's tests (tests/test_vmlab*.py) boot QEMU guests: QEMU, libvirt, busybox-static and
# GRUB from Debian's packages, libvirt's libvirt-qemu user, and the guest image, built once into
# /var/cache/nettune/vmlab (`nettune setup --vms`; quick when all is there). Where it cannot
# (no apt-get), those tests skip and say why.
#
# With no arguments (CI), that setup and the VM lab's tests run beside the rest of the suite,
# in private mount, network and PID namespaces (scripts/isolated.sh): they mostly wait for
# guests to boot, and nothing of theirs is seen by the other tests' leftover checks. Arguments
# run pytest on what they name, in this shell.
if [ "$#" -gt 0 ]; then
  exec python -m pytest -q -p no:cacheprovider --durations=20 "$@"
fi
# Lab tests that need no value of this machine's own network namespace (no host-wide sysctl)
# run there too, after the VM lab's: each shard takes part of the other's waiting time. So do
# the PostgreSQL store's tests (a throwaway cluster on a Unix socket in a temporary directory:
# only lo is up there, and that is all it needs) and history's, with PostgreSQL's server
# installed in that shard, so the rest of the suite does not wait for it.
beside="tests/test_lab_results.py tests/test_series_export.py tests/test_search_lab.py tests/test_ssh_conformance.py \
  tests/test_store_members.py tests/test_postgres_runs.py tests/test_history.py tests/test_grafana_dashboard.py"
ignore=""
for t in tests/test_vmlab.py tests/test_vmlab_parts.py $beside; do ignore="$ignore --ignore=$t"; done
vm_log=$(mktemp /tmp/nettune-vmtests.XXXXXX)
(
  # PostgreSQL's server (setup_tools.PG_TEST_TOOLS: initdb, pg_ctl) for the store tests
  if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && ! command -v initdb >/dev/null; then
    if command -v apt-get >/dev/null; then
      if [ ! -d /etc/postgresql-common ]; then
        # Debian's documented switch: the package creates (and starts) no cluster of its own;
        # the tests start theirs in a temporary directory and stop it
        mkdir -p /etc/postgresql-common/createcluster.d
        echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/nettune-no-main-cluster.conf
      fi
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null \
        || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null; } \
        || echo "apt-get could not install PostgreSQL's server: the store tests say why they skip" >&2
    elif command -v dnf >/dev/null; then
      dnf install -y -q postgresql-server || echo "dnf could not install PostgreSQL's server: the store tests say why they skip" >&2
    fi
  fi
  if command -v apt-get >/dev/null; then
    # the packages of setup_tools.VM_TOOLS and VM_FILES (tests/test_setup_tools.py keeps them in
    # step); `nettune setup --vms` then adds libvirt's user and builds the guest image
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q qemu-system-x86 qemu-utils libvirt-daemon libvirt-clients \
      libvirt-daemon-driver-qemu busybox-static grub-common grub2-common grub-pc-bin e2fsprogs util-linux dpkg dash >/dev/null \
      || echo "apt-get could not install the VM lab's packages: tests/test_vmlab.py says why it skips" >&2
    nettune setup --vms | tail -n 1 || echo "nettune setup --vms failed: tests/test_vmlab.py says why it skips" >&2
  fi
  # NETTUNE_VM_TESTS=all: the guest reboots, both kill -9 cases and study A's whole miniature
  # (about 4 minutes more under TCG here, inside this shard's slack)
  # shellcheck disable=SC2086
  NETTUNE_VM_TESTS=all bash scripts/isolated.sh python -m pytest -q -p no:cacheprovider --durations=10 tests/test_vmlab.py tests/test_vmlab_parts.py $beside
) >"$vm_log" 2>&1 &
vm_pid=$!
rc=0
# shellcheck disable=SC2086
python -m pytest -q -p no:cacheprovider --durations=20 $ignore || rc=$?
vm_rc=0
wait "$vm_pid" || vm_rc=$?
echo "=== the VM lab's setup and tests, and the lab tests beside the suite (in their own namespaces) ==="
cat "$vm_log"
rm -f "$vm_log"
[ "$rc" -ne 0 ] && exit "$rc"
exit "$vm_rc"
