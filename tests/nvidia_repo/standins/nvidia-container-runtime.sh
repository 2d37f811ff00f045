#!/bin/sh
# nvidia-container-runtime @VERSION@: ClusterForge test stand-in (tests/nvidia_repo).
# `--version` as the real runtime prints it; anything else goes to runc unchanged
# (the real runtime is a runc wrapper that adds the GPU hook; there is no GPU here).
if [ "$1" = "--version" ] || [ "$1" = "-v" ]; then
    printf 'NVIDIA Container Runtime version @VERSION@\ncommit: clusterforge-test-stand-in\nspec: 1.2.0\n'
    exit 0
fi
if command -v runc >/dev/null 2>&1; then
    exec runc "$@"
fi
echo "nvidia-container-runtime: runc not found: install runc" >&2
exit 1
