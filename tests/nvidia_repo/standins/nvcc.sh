#!/bin/sh
# nvcc @VERSION@: ClusterForge test stand-in (tests/nvidia_repo) of the CUDA @RELEASE@ compiler driver.
# It prints its version the way nvcc does and compiles nothing.
case "$1" in
    --version|-V)
        cat <<'VERSION_TEXT'
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on @BUILT@
Cuda compilation tools, release @RELEASE@, V@VERSION@
Build cuda_@RELEASE@.r@RELEASE@/compiler.@BUILD@
VERSION_TEXT
        exit 0
        ;;
    "")
        echo "nvcc fatal   : No input files specified; use option --help for more information" >&2
        exit 1
        ;;
esac
echo "nvcc fatal   : ClusterForge test stand-in: compiling is not supported" >&2
exit 1
