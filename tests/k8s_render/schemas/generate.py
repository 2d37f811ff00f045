"""Writes the kubeadm / kubelet / kube-proxy configuration schemas of this folder (kubeadm/*.json).

Written by hand from the field lists of the official configuration references
(kubernetes.io/docs/reference/config-api/: kubeadm-config.v1beta3, kubeadm-config.v1beta4,
kubelet-config.v1beta1, kube-proxy-config.v1alpha1). kubeadm decodes its configuration strictly,
so every object is additionalProperties: false; a field the roles start to use must be added
here first. Run: python tests/k8s_render/schemas/generate.py (the JSON files are committed).
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent / "kubeadm"
STR = {"type": "string"}
INT = {"type": "integer"}
BOOL = {"type": "boolean"}
STRS = {"type": "array", "items": STR}
STRMAP = {"type": "object", "additionalProperties": STR}
DURATION = {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"}
ANYOBJ = {"type": "object"}


def obj(props: dict, required: tuple[str, ...] = ()) -> dict:
    return {"type": "object", "properties": props, "required": list(required), "additionalProperties": False}


def root(group_version: str, kind: str, props: dict, required: tuple[str, ...] = ()) -> dict:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"{group_version} {kind}",
        **obj(
            {"apiVersion": {"const": group_version}, "kind": {"const": kind}, **props},
            ("apiVersion", "kind", *required),
        ),
    }


def kubeadm(version: str) -> dict[str, dict]:
    v4 = version == "v1beta4"
    gv = f"kubeadm.k8s.io/{version}"
    args = {"type": "array", "items": obj({"name": STR, "value": STR}, ("name", "value"))} if v4 else STRMAP
    envs = {"type": "array", "items": ANYOBJ}
    taint = obj(
        {
            "key": STR,
            "value": STR,
            "effect": {"enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]},
            "timeAdded": STR,
        },
        ("key", "effect"),
    )
    node_registration = obj(
        {
            "name": STR,
            "criSocket": STR,
            "taints": {"type": ["array", "null"], "items": taint},
            "kubeletExtraArgs": args,
            "ignorePreflightErrors": STRS,
            "imagePullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]},
            **({"imagePullSerial": BOOL} if v4 else {}),
        }
    )
    endpoint = obj({"advertiseAddress": STR, "bindPort": {"type": "integer", "minimum": 1, "maximum": 65535}})
    token = obj(
        {
            "token": {"type": "string", "pattern": r"^[a-z0-9]{6}\.[a-z0-9]{16}$"},
            "description": STR,
            "ttl": DURATION,
            "expires": STR,
            "usages": {"type": "array", "items": {"enum": ["signing", "authentication"]}},
            "groups": STRS,
        },
        ("token",),
    )
    patches = obj({"directory": STR})
    timeouts = obj(
        {
            k: DURATION
            for k in (
                "controlPlaneComponentHealthCheck",
                "kubeletHealthCheck",
                "kubernetesAPICall",
                "etcdAPICall",
                "tlsBootstrap",
                "discovery",
                "upgradeManifests",
            )
        }
    )
    volume = obj(
        {"name": STR, "hostPath": STR, "mountPath": STR, "readOnly": BOOL, "pathType": STR},
        ("name", "hostPath", "mountPath"),
    )
    component = {
        "extraArgs": args,
        "extraVolumes": {"type": "array", "items": volume},
        **({"extraEnvs": envs} if v4 else {}),
    }
    api_server = obj({**component, "certSANs": STRS, **({} if v4 else {"timeoutForControlPlane": DURATION})})
    image_meta = {"imageRepository": STR, "imageTag": STR}
    etcd = obj(
        {
            "local": obj(
                {
                    **image_meta,
                    "dataDir": STR,
                    "extraArgs": args,
                    **({"extraEnvs": envs} if v4 else {}),
                    "serverCertSANs": STRS,
                    "peerCertSANs": STRS,
                }
            ),
            "external": obj(
                {"endpoints": STRS, "caFile": STR, "certFile": STR, "keyFile": STR}, ("endpoints",)
            ),
        }
    )
    hash_pattern = {"type": "string", "pattern": "^sha256:[a-f0-9]{64}$"}
    discovery = obj(
        {
            "bootstrapToken": obj(
                {
                    "token": STR,
                    "apiServerEndpoint": STR,
                    "caCertHashes": {"type": "array", "items": hash_pattern},
                    "unsafeSkipCAVerification": BOOL,
                },
                ("token",),
            ),
            "file": obj({"kubeConfigPath": STR}, ("kubeConfigPath",)),
            "tlsBootstrapToken": STR,
            **({} if v4 else {"timeout": DURATION}),
        }
    )
    init = root(
        gv,
        "InitConfiguration",
        {
            "bootstrapTokens": {"type": "array", "items": token},
            "nodeRegistration": node_registration,
            "localAPIEndpoint": endpoint,
            "certificateKey": {"type": "string", "pattern": "^[a-f0-9]{64}$"},
            "skipPhases": STRS,
            "patches": patches,
            **({"dryRun": BOOL, "timeouts": timeouts} if v4 else {}),
        },
    )
    cluster = root(
        gv,
        "ClusterConfiguration",
        {
            "etcd": etcd,
            "networking": obj({"serviceSubnet": STR, "podSubnet": STR, "dnsDomain": STR}),
            "kubernetesVersion": {"type": "string", "pattern": r"^v?[0-9]+\.[0-9]+\.[0-9]+"},
            "controlPlaneEndpoint": STR,
            "apiServer": api_server,
            "controllerManager": obj(component),
            "scheduler": obj(component),
            "dns": obj({**image_meta, **({"disabled": BOOL} if v4 else {})}),
            "certificatesDir": STR,
            "imageRepository": STR,
            "featureGates": {"type": "object", "additionalProperties": BOOL},
            "clusterName": STR,
            **(
                {
                    "proxy": obj({"disabled": BOOL}),
                    "encryptionAlgorithm": {"enum": ["RSA-2048", "RSA-3072", "RSA-4096", "ECDSA-P256"]},
                    "certificateValidityPeriod": DURATION,
                    "caCertificateValidityPeriod": DURATION,
                }
                if v4
                else {}
            ),
        },
    )
    join = root(
        gv,
        "JoinConfiguration",
        {
            "nodeRegistration": node_registration,
            "caCertPath": STR,
            "discovery": discovery,
            "controlPlane": obj(
                {
                    "localAPIEndpoint": endpoint,
                    "certificateKey": {"type": "string", "pattern": "^[a-f0-9]{64}$"},
                }
            ),
            "skipPhases": STRS,
            "patches": patches,
            **({"dryRun": BOOL, "timeouts": timeouts} if v4 else {}),
        },
        ("discovery",),
    )
    return {
        f"kubeadm.k8s.io_{version}_{d['properties']['kind']['const'].lower()}.json": d
        for d in (init, cluster, join)
    }


def kubelet() -> dict:
    props: dict = {
        k: INT
        for k in (
            "port",
            "readOnlyPort",
            "healthzPort",
            "maxPods",
            "podPidsLimit",
            "registryPullQPS",
            "registryBurst",
            "eventRecordQPS",
            "eventBurst",
            "kubeAPIQPS",
            "kubeAPIBurst",
            "imageGCHighThresholdPercent",
            "imageGCLowThresholdPercent",
            "maxOpenFiles",
            "containerLogMaxFiles",
            "oomScoreAdj",
            "nodeStatusMaxImages",
            "containerLogMaxWorkers",
        )
    }
    props |= {
        k: BOOL
        for k in (
            "enableServer",
            "rotateCertificates",
            "serverTLSBootstrap",
            "failSwapOn",
            "enableControllerAttachDetach",
            "protectKernelDefaults",
            "makeIPTablesUtilChains",
            "serializeImagePulls",
            "cgroupsPerQOS",
            "enableDebuggingHandlers",
            "enableContentionProfiling",
            "enableSystemLogHandler",
            "enableProfilingHandler",
            "localStorageCapacityIsolation",
            "seccompDefault",
            "registerNode",
            "failCgroupV1",
            "kernelMemcgNotification",
        )
    }
    props |= {
        k: STR
        for k in (
            "staticPodPath",
            "staticPodURL",
            "address",
            "tlsCertFile",
            "tlsPrivateKeyFile",
            "tlsMinVersion",
            "healthzBindAddress",
            "clusterDomain",
            "resolvConf",
            "cgroupRoot",
            "containerRuntimeEndpoint",
            "imageServiceEndpoint",
            "providerID",
            "podCIDR",
            "hairpinMode",
            "kubeletCgroups",
            "systemCgroups",
            "topologyManagerPolicy",
            "topologyManagerScope",
            "memoryManagerPolicy",
            "containerLogMaxSize",
            "configMapAndSecretChangeDetectionStrategy",
            "systemReservedCgroup",
            "kubeReservedCgroup",
            "contentType",
            "cpuManagerPolicy",
            "podLogsDir",
        )
    }
    props |= {
        k: DURATION
        for k in (
            "syncFrequency",
            "fileCheckFrequency",
            "httpCheckFrequency",
            "streamingConnectionIdleTimeout",
            "nodeStatusUpdateFrequency",
            "nodeStatusReportFrequency",
            "imageMinimumGCAge",
            "imageMaximumGCAge",
            "volumeStatsAggPeriod",
            "cpuManagerReconcilePeriod",
            "runtimeRequestTimeout",
            "evictionPressureTransitionPeriod",
            "shutdownGracePeriod",
            "shutdownGracePeriodCriticalPods",
        )
    }
    props |= {
        "cgroupDriver": {"enum": ["systemd", "cgroupfs"]},
        "clusterDNS": STRS,
        "tlsCipherSuites": STRS,
        "allowedUnsafeSysctls": STRS,
        "enforceNodeAllocatable": STRS,
        "reservedSystemCPUs": STR,
        "nodeLeaseDurationSeconds": INT,
        "systemReserved": STRMAP,
        "kubeReserved": STRMAP,
        "evictionHard": STRMAP,
        "evictionSoft": STRMAP,
        "evictionSoftGracePeriod": STRMAP,
        "evictionMinimumReclaim": STRMAP,
        "featureGates": {"type": "object", "additionalProperties": BOOL},
        "cpuManagerPolicyOptions": STRMAP,
        "topologyManagerPolicyOptions": STRMAP,
        "authentication": ANYOBJ,
        "authorization": ANYOBJ,
        "logging": ANYOBJ,
        "memorySwap": obj({"swapBehavior": STR}),
        "registerWithTaints": {"type": "array"},
        "shutdownGracePeriodByPodPriority": {"type": "array"},
        "reservedMemory": {"type": "array"},
        "tracing": ANYOBJ,
        "crashLoopBackOff": ANYOBJ,
    }
    return root("kubelet.config.k8s.io/v1beta1", "KubeletConfiguration", props)


def kube_proxy() -> dict:
    props = {
        "bindAddress": STR,
        "healthzBindAddress": STR,
        "metricsBindAddress": STR,
        "bindAddressHardFail": BOOL,
        "enableProfiling": BOOL,
        "clusterCIDR": STR,
        "hostnameOverride": STR,
        "clientConnection": ANYOBJ,
        "iptables": ANYOBJ,
        "ipvs": ANYOBJ,
        "nftables": ANYOBJ,
        "winkernel": ANYOBJ,
        "conntrack": ANYOBJ,
        "mode": {"enum": ["", "iptables", "ipvs", "nftables", "kernelspace"]},
        "nodePortAddresses": STRS,
        "oomScoreAdj": INT,
        "configSyncPeriod": DURATION,
        "portRange": STR,
        "detectLocalMode": STR,
        "detectLocal": ANYOBJ,
        "showHiddenMetricsForVersion": STR,
        "featureGates": {"type": "object", "additionalProperties": BOOL},
        "logging": ANYOBJ,
    }
    return root("kubeproxy.config.k8s.io/v1alpha1", "KubeProxyConfiguration", props)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    files = {
        **kubeadm("v1beta3"),
        **kubeadm("v1beta4"),
        "kubelet.config.k8s.io_v1beta1_kubeletconfiguration.json": kubelet(),
        "kubeproxy.config.k8s.io_v1alpha1_kubeproxyconfiguration.json": kube_proxy(),
    }
    for name, schema in files.items():
        (OUT / name).write_text(json.dumps(schema, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
