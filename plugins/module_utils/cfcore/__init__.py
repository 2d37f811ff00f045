"""cfcore: ClusterForge's node-side library.

Parsers of vendor tool outputs, the check logic of node validation and the
result model. Standard library only, Python >= 3.8: it runs inside Ansible
modules on the nodes (shipped there as module_utils) and in the CLI on the
controller (installed beside the `clusterforge` package), so both use the very
same code. Inside this package use relative imports only.
"""
