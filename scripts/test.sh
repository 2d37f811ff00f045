#!/usr/bin/env bash
# ClusterForge's test command: does all set-up on a fresh Debian/Ubuntu machine
# (host packages, node image, virtual environment), then runs every gate:
#   lint      yamllint, ansible-lint (production profile), ruff
#   unit      pytest: unit tests and conformance tests on real captured outputs
#   molecule  every role's Molecule scenario (real Debian nodes in podman)
#   lab       integration tests on a lab cluster (clusterforge lab up ... down)
# and prints how long each part took.
#
#   scripts/test.sh                 everything
#   scripts/test.sh lint unit       only these parts (setup always runs)
#   CF_MOLECULE_SCENARIOS="base"    only these roles' scenarios
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export CONTAINERS_CONF=$ROOT/images/node/containers.conf
export PATH=$ROOT/.venv/bin:$PATH
export PY_COLORS=0 ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 NO_COLOR=1
PARTS=("$@")
((${#PARTS[@]})) || PARTS=(lint unit molecule lab)

TIMINGS=()
FAILED=()
T_START=$SECONDS
run_part() {  # run_part NAME cmd...: run, time and record a part; keep going on failure
  local name=$1 t0=$SECONDS rc=0; shift
  printf '\n===== %s\n' "$name"
  "$@" || rc=$?
  TIMINGS+=("$(printf '%-28s %5ds  %s' "$name" $((SECONDS - t0)) "$([[ $rc == 0 ]] && echo ok || echo "FAILED (rc=$rc)")")")
  [[ $rc == 0 ]] || FAILED+=("$name")
  return $rc
}
wants() { local p; for p in "${PARTS[@]}"; do [[ $p == "$1" ]] && return 0; done; return 1; }

lint() {
  local rc=0
  yamllint -s . || rc=1
  ruff check . || rc=1
  ruff format --check . || rc=1
  # ansible.cfg makes an unparsed inventory fatal; give the syntax check one.
  ANSIBLE_INVENTORY=inventories/example ansible-lint -q || rc=1
  return $rc
}

# Each stack's Molecule time is summed and printed against the CI time its issue
# allows it (seconds); the stack's unit tests and lab share come on top.
declare -A STACK_SECONDS=()
declare -A STACK_BUDGET=([nvidia]=480 [ascend]=480 [fabric]=240 [storage]=480 [schedulers]=480 [monitoring]=300)
stack_of() {
  case $1 in
    nvidia_* | cuda_toolkit | nccl | tensorrt | dcgm | gpudirect) echo nvidia ;;
    ascend_* | cann | hccn | ppu) echo ascend ;;
    rdma | ib_fabric | roce) echo fabric ;;
    ceph | ceph_client | juicefs | juicefs_redis) echo storage ;;
    slurm | node_healthcheck | node_expectation | scheduler_drain | containerd | kubernetes | volcano | k8s_device_plugins) echo schedulers ;;
    exporters | prometheus | grafana) echo monitoring ;;
    *) echo "$1" ;;
  esac
}

molecule_all() {
  local rc=0 role scen t0 stack
  for scen in roles/*/molecule/*/molecule.yml; do
    [[ -e $scen ]] || { echo "no Molecule scenarios"; return 0; }
    role=$(basename "$(dirname "$(dirname "$(dirname "$scen")")")")
    if [[ -n ${CF_MOLECULE_SCENARIOS:-} && " $CF_MOLECULE_SCENARIOS " != *" $role "* ]]; then continue; fi
    t0=$SECONDS stack=$(stack_of "$role")
    run_part "molecule $role/$(basename "$(dirname "$scen")")" \
      bash -c "cd roles/$role && molecule test -s $(basename "$(dirname "$scen")")" || rc=1
    STACK_SECONDS[$stack]=$((${STACK_SECONDS[$stack]:-0} + SECONDS - t0))
  done
  return $rc
}

run_part "setup: host packages" scripts/setup-host.sh || exit 4
run_part "setup: python venv" scripts/setup-venv.sh || exit 4
run_part "setup: promtool, amtool" scripts/setup-tools.sh || exit 4
if wants molecule || wants lab; then
  run_part "setup: node image" scripts/build-node-image.sh || exit 4
fi
wants lint && run_part lint lint
# Both cores: the unit tests are CPU-bound and independent (measured 392 s -> 257 s on 2 cores).
wants unit && run_part "unit + conformance" pytest -q -n auto
wants molecule && molecule_all
wants lab && run_part "lab integration" pytest -q -m lab tests/integration --durations=25

printf '\n===== timings\n'
printf '%s\n' "${TIMINGS[@]}"
printf '%-28s %5ds\n' "total" $((SECONDS - T_START))
for stack in "${!STACK_SECONDS[@]}"; do
  printf 'stack %-22s %5ds  Molecule%s\n' "$stack" "${STACK_SECONDS[$stack]}" \
    "${STACK_BUDGET[$stack]:+ (CI budget of the stack: ${STACK_BUDGET[$stack]} s, with its unit and lab share)}"
done
if ((${#FAILED[@]})); then
  printf 'FAILED: %s\n' "${FAILED[*]}"
  exit 1
fi
echo "all parts passed"
