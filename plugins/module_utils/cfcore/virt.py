"""Where a node runs: on bare metal, in a virtual machine, or in a container.

Ansible's facts say it (`virtualization_type`, `virtualization_role`); the roles
decide from it what applies. A container shares its host's kernel and hardware:
no DKMS build or kernel headers of its own, no reboot, but vendor tools that
talk to the devices (firmware flashing) work as on the host. A virtual machine
has virtual hardware: firmware is never flashed from one.

Stdlib only, Python 3.8: used by filters and modules.
"""

from __future__ import annotations

# ansible_facts.virtualization_type values of a virtual machine (hypervisor guests). Containers
# (podman, docker, lxc, ...) share the host's kernel and hardware: they are not virtual machines.
VM_TYPES = frozenset(
    {
        "kvm",
        "qemu",
        "vmware",
        "virtualbox",
        "xen",
        "hyperv",
        "rhev",
        "openstack",
        "parallels",
        "bhyve",
        "virtualpc",
        "powervm_lx86",
        "amazon",
        "kubevirt",
    }
)
CONTAINER_TYPES = frozenset(
    {"container", "podman", "docker", "lxc", "openvz", "containerd", "systemd-nspawn", "container-other"}
)


def is_virtual_machine(virtualization_type, virtualization_role):
    """A hypervisor guest (kvm, VMware, ...). Containers share the host's hardware: not a VM."""
    role = str(virtualization_role or "").strip().lower()
    vtype = str(virtualization_type or "").strip().lower()
    return role == "guest" and vtype in VM_TYPES


def is_container(virtualization_type, virtualization_role):
    """A container guest (podman, docker, lxc, ...): the host's kernel, no kernel builds of its own."""
    role = str(virtualization_role or "").strip().lower()
    vtype = str(virtualization_type or "").strip().lower()
    return role == "guest" and vtype in CONTAINER_TYPES
