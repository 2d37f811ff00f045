"""`clusterforge lab`: a local cluster of podman containers standing in for racked servers.

model.py        roles, node plan (names, addresses), input validation
podman.py       the podman CLI driver          runner.py   command execution
environment.py  preflight: root, tools, image, free subnet
access.py       SSH key, authorized_keys, known_hosts, login probes
readiness.py    boot wait, access grant, SSH wait
inventory.py    the generated inventory        state.py    lab files and record
up.py / down.py / status.py   the commands     progress.py terminal output
"""
