"""The Kubernetes node labels and extended resource of an Ascend node, from its SKU and architecture.

What the Ascend device plugin (MindCluster ascend-device-plugin) and its DaemonSet expect
(vendor-packaging notes, section 7): the nodeSelector `workerselector=dls-worker-node`,
`host-arch=huawei-arm|huawei-x86`, `accelerator=huawei-Ascend910|huawei-Ascend310P` and
`accelerator-type`; the resource `huawei.com/Ascend910` or `huawei.com/Ascend310P`.

The `accelerator-type` values follow MindCluster's naming as we know it (`module-910b-8` for an
8-NPU 910B module server, `module-a3-16` for an A3 with 16 dies, `module` for the Atlas 800 9000,
`card` for 310P cards); they are not in our cited sources: the roles' README says so.

Stdlib only, Python 3.8-safe.
"""

from __future__ import annotations

from .inputs import InputError

WORKER_SELECTOR = ("workerselector", "dls-worker-node")
HOST_ARCH = {"x86_64": "huawei-x86", "amd64": "huawei-x86", "aarch64": "huawei-arm", "arm64": "huawei-arm"}
RESOURCE_PREFIX = "huawei.com/"


def chip_family(model) -> str:
    """Ascend910 (910, 910B, A3's Ascend910) or Ascend310P, from the catalog's accelerator.model."""
    text = str(model or "").strip().lower()
    if text.startswith("310p"):
        return "Ascend310P"
    if text in ("910", "910a", "910b", "ascend910", "910c") or text.startswith(("910b", "910pro")):
        return "Ascend910"
    raise InputError(
        f"accelerator model {model!r} is not an Ascend chip the device plugin labels "
        "(910, 910B, Ascend910, 310P)",
        "correct node_sku, or the SKU's accelerator.model in clusterforge_sku_catalog",
    )


def accelerator_type(accelerator: dict) -> str:
    model = str(accelerator.get("model") or "").strip().lower()
    count = int(accelerator.get("count") or 0)
    chips = int(accelerator.get("chips_per_device") or 1)
    if chip_family(model) == "Ascend310P":
        return "card"
    if model == "ascend910" and chips == 2:  # A3: two dies per NPU, each its own device
        return f"module-a3-{count * chips}"
    if model.startswith("910b"):
        return f"module-910b-{count}"
    return "module"


def node_labels(sku: dict, architecture) -> dict:
    """{labels: {name: value}, resource, resource_count} for an Ascend SKU spec on `architecture`."""
    accelerator = (sku or {}).get("accelerator") or {}
    if accelerator.get("vendor") != "huawei":
        raise InputError(
            f"the SKU's accelerator is {accelerator.get('vendor') or 'none'}, not huawei: no Ascend labels",
            "apply the Ascend roles only to npu_ascend hosts whose node_sku is an Ascend SKU",
        )
    arch = HOST_ARCH.get(str(architecture or "").strip().lower())
    if arch is None:
        raise InputError(
            f"architecture {architecture!r} is neither x86_64 nor aarch64",
            "run on an x86_64 or aarch64 node (ansible_facts.architecture)",
        )
    family = chip_family(accelerator.get("model"))
    chips = int(accelerator.get("chips_per_device") or 1)
    return {
        "labels": {
            WORKER_SELECTOR[0]: WORKER_SELECTOR[1],
            "host-arch": arch,
            "accelerator": f"huawei-{family}",
            "accelerator-type": accelerator_type(accelerator),
        },
        "resource": RESOURCE_PREFIX + family,
        "resource_count": int(accelerator.get("count") or 0) * chips,
    }


def installed_runtime_version(text) -> str:
    """The version in Ascend Docker Runtime's install info (`version=v6.0.0`), without the v; "" if none."""
    for line in str(text or "").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "version" and value.strip():
            return strip_v(value.strip())
    return ""


def strip_v(version) -> str:
    text = str(version or "").strip()
    return text[1:] if text[:1] in ("v", "V") and text[1:2].isdigit() else text
