#!/usr/bin/env bash
# Run a command in private mount, network and PID namespaces, so its lab namespaces, bridges,
# veths, sysctls, processes and nettune's state directories (/run/nettune, /var/lib/nettune)
# never meet those of a run beside it. bash stays PID 1 there and reaps orphans (libvirtd
# waits for its QEMU probes to be reaped). Usage: scripts/isolated.sh CMD...
exec unshare --mount --net --pid --fork --mount-proc --propagation private bash -c '
  mkdir -p /run/netns /run/nettune /var/lib/nettune
  mount -t tmpfs tmpfs /run/netns
  mount -t tmpfs -o mode=0755 tmpfs /run/nettune
  mount -t tmpfs -o mode=0755 tmpfs /var/lib/nettune
  mount -t sysfs sysfs /sys
  ip link set lo up
  "$@"; exit $?' isolated "$@"
