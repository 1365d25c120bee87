"""The text of the files that make a VM lab guest boot, and what its first boot does.

The guest is Debian's kernel and Debian's binaries (sshd, iperf3, iperf, ethtool, tc,
GRUB's update-grub) on an ext4 root, run by busybox init. Its boot chain is the one a
Debian VM has: SeaBIOS, GRUB's boot.img in the MBR, core.img after it, /boot/grub/grub.cfg
written by update-grub from /etc/default/grub, the kernel and an initrd. The initrd is
nettune's own (busybox: load the virtio and ext4 modules, mount root= read-only,
switch_root), because Debian's initramfs-tools is not needed for a virtio disk.

Each guest gets a seed at every boot: a tar archive attached as a second disk (vdb), read
with `tar -x` from the block device (no filesystem, no loop device on the host), holding
its host name, address, sshd host key and config, and the lab's authorized key.
"""
from __future__ import annotations

GUEST_IF = "eth0"  # no udev in the guest: the kernel's own name of the virtio NIC
SEED_CONF = "etc/nettune/guest.conf"  # ADDRESS= PREFIX= IFACE= NAME=
UP_MARK = "NETTUNE-GUEST-UP"  # on the serial console once sshd runs
FIRSTBOOT_MARK = "NETTUNE-FIRSTBOOT-OK"  # printed after the build-time update-grub
FIRSTBOOT_FAILED = "NETTUNE-FIRSTBOOT-FAILED"

# loaded at every boot (the rest load on demand: modules.alias + busybox modprobe)
BOOT_MODULES = ["virtio_net", "virtio_rng", "button", "evdev", "sch_netem", "sch_tbf"]
INITRD_MODULES = ["virtio_pci", "virtio_blk", "crc32c_generic", "ext4"]

INITRD_INIT = r"""#!/bin/sh
# nettune vmlab initrd: virtio disk and ext4, then the root= of the kernel command line
PATH=/bin; export PATH
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in __MODULES__; do modprobe "$m"; done
root=""
for w in $(cat /proc/cmdline); do case "$w" in root=*) root="${w#root=}";; esac; done
find_root() { case "$root" in UUID=*|LABEL=*) findfs "$root" 2>/dev/null;; *) echo "$root";; esac; }
i=0
dev=$(find_root)
while [ -z "$dev" ] || [ ! -b "$dev" ]; do
  i=$((i + 1))
  if [ "$i" -gt 100 ]; then echo "nettune initrd: no root device $root"; exec sh; fi
  sleep 0.1
  dev=$(find_root)
done
mount -o ro "$dev" /newroot || { echo "nettune initrd: cannot mount $dev"; exec sh; }
umount /sys /proc
mount --move /dev /newroot/dev
exec switch_root /newroot /sbin/init
"""

INITTAB = """# nettune vmlab guest (busybox init)
::sysinit:/etc/init.d/rcS
::ctrlaltdel:/sbin/reboot
::shutdown:/etc/init.d/rcK
"""

RC_S = r"""#!/bin/sh
# nettune vmlab guest: bring the guest up from its seed (the tar archive on /dev/vdb)
PATH=/usr/sbin:/usr/bin:/sbin:/bin; export PATH
mount -t proc proc /proc
mount -t sysfs sysfs /sys
grep -q ' /dev ' /proc/mounts || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -o remount,rw /
echo /sbin/modprobe > /proc/sys/kernel/modprobe
for m in $(cat /etc/nettune/modules); do modprobe "$m"; done
if [ -f /etc/nettune/firstboot ]; then
  if update-grub > /var/log/firstboot.log 2>&1; then
    rm -f /etc/nettune/firstboot
    sync
    echo "__FIRSTBOOT_MARK__"
  else
    echo "__FIRSTBOOT_FAILED__: $(tail -n 3 /var/log/firstboot.log | tr '\n' ' ')"
  fi
  poweroff
  exit 0
fi
[ -b /dev/vdb ] && tar -xf /dev/vdb -C /
. /__SEED_CONF__
hostname "$NAME"
ip link set lo up
ip link set "$IFACE" up
ip addr add "$ADDRESS/$PREFIX" dev "$IFACE"
mkdir -p /run/sshd /var/log
chmod 0600 /etc/ssh/ssh_host_ed25519_key
/usr/sbin/sshd -f /etc/ssh/sshd_config -E /var/log/sshd.log
acpid -c /etc/acpi -l /var/log/acpid.log
echo "__UP_MARK__ $NAME $ADDRESS $(cat /proc/sys/kernel/random/boot_id)"
"""

RC_K = """#!/bin/sh
# nettune vmlab guest: stop, flush and unmount before poweroff or reboot
PATH=/usr/sbin:/usr/bin:/sbin:/bin; export PATH
[ -f /run/sshd.pid ] && kill "$(cat /run/sshd.pid)" 2>/dev/null
sync
umount -a -r 2>/dev/null
mount -o remount,ro / 2>/dev/null
sync
"""

# busybox acpid runs CONFDIR/<action> for the power button's event: `virsh shutdown`
# presses it (ACPI), and without this the guest would never go down
ACPI_POWER = "#!/bin/sh\n/sbin/poweroff\n"

PASSWD = """root:x:0:0:root:/root:/bin/sh
sshd:x:100:65534::/run/sshd:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
"""
GROUP = "root:x:0:\nnogroup:x:65534:\n"
SHADOW = "root:*:19000:0:99999:7:::\nsshd:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n"
NSSWITCH = "passwd: files\ngroup: files\nshadow: files\nhosts: files\n"
HOSTS = "127.0.0.1 localhost\n"
OS_RELEASE = """PRETTY_NAME="nettune vmlab guest (Debian binaries)"
NAME="nettune vmlab guest"
ID=debian
HOME_URL="https://www.debian.org/"
"""


def default_grub(template: str) -> str:
    """Debian's /etc/default/grub (grub2-common's template) as a VM has it, with what the
    lab needs: no menu wait, and the console on the serial port (the lab keeps its log)."""
    out = []
    for line in template.splitlines():
        if line.startswith("GRUB_TIMEOUT="):
            line = "GRUB_TIMEOUT=0"
        elif line.startswith("GRUB_CMDLINE_LINUX="):
            line = 'GRUB_CMDLINE_LINUX="console=ttyS0,115200"'
        out.append(line)
    out += ["", "# the VM lab's serial console (nettune keeps it as console-<host>.log)",
            'GRUB_TERMINAL="serial console"', 'GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"']
    return "\n".join(out) + "\n"


def bootstrap_grub_cfg(uuid: str, release: str) -> str:
    """The grub.cfg of the image before its first boot; that boot replaces it with
    update-grub's own, from /etc/default/grub."""
    return (f"# nettune: replaced by update-grub at the image's first boot\nset timeout=0\nserial --unit=0 --speed=115200\n"
            f"terminal_output serial console\ninsmod part_msdos\ninsmod ext2\nsearch --no-floppy --fs-uuid --set=root {uuid}\n"
            f"linux /boot/vmlinuz-{release} root=UUID={uuid} ro console=ttyS0,115200 quiet\ninitrd /boot/initrd.img-{release}\nboot\n")


def fill(text: str) -> str:
    return (text.replace("__SEED_CONF__", SEED_CONF).replace("__UP_MARK__", UP_MARK)
            .replace("__FIRSTBOOT_MARK__", FIRSTBOOT_MARK).replace("__FIRSTBOOT_FAILED__", FIRSTBOOT_FAILED)
            .replace("__MODULES__", " ".join(INITRD_MODULES)))


def seed_conf(name: str, address: str, prefix: int) -> str:
    return f"NAME={name}\nADDRESS={address}\nPREFIX={prefix}\nIFACE={GUEST_IF}\n"
