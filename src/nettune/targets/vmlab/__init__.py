"""The VM lab: QEMU guests with a real Linux kernel, booted by GRUB from a disk image,
defined as domains of a private libvirtd, on the lab bridge (`[target] kind = "vmlab"`)."""
