#!/usr/bin/env bash
# Two hosts on this machine: network namespaces h1 and h2, each with its own host name (a UTS
# namespace), joined by a veth pair (10.77.0.1 and 10.77.0.2). Open MPI starts one process on each:
# mpirun runs on h1 and reaches h2 through a launch agent that runs `ip netns exec` where it would
# run ssh, and the processes talk TCP over the veth addresses alone. Checks:
#   - 2 hosts x 1 process equal 1 process with the global micro-batch (to float32 rounding), and
#     sharding the optimizer state or the gradients changes no bit;
#   - the link cut mid-run (`ip link set ... down`) makes both processes stop within 60 s, each
#     naming the other (rank and host), with the last checkpoint intact; once the link is back the
#     run continues from it and ends with the bits of a run never interrupted.
# Skips (status 77) where namespaces cannot be made: not root, or no iproute2 / unshare.
#   two_hosts.sh MPIEXEC TWO_HOSTS_PROGRAM
set -uo pipefail
mpiexec=$1 program=$2
skip() { echo "SKIPPED: two hosts need $1"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "root (network namespaces)"
command -v ip >/dev/null || skip "iproute2's ip"
command -v unshare >/dev/null || skip "util-linux's unshare"
tag=$$ h1=accrue_h1_$$ h2=accrue_h2_$$
ip netns add "$h1" 2>/dev/null || skip "ip netns add to work (it failed: no privilege for namespaces here)"
dir=$(mktemp -d)
cleanup() {
  for ns in "$h1" "$h2"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$dir"
}
trap cleanup EXIT
set -e
ip netns add "$h2"
ip link add "v${tag}a" netns "$h1" type veth peer name "v${tag}b" netns "$h2"
ip -n "$h1" addr add 10.77.0.1/24 dev "v${tag}a"
ip -n "$h2" addr add 10.77.0.2/24 dev "v${tag}b"
for ns in "$h1" "$h2"; do ip -n "$ns" link set lo up; done
ip -n "$h1" link set "v${tag}a" up
ip -n "$h2" link set "v${tag}b" up
set +e

# The launch agent, called as ssh would be: AGENT HOST COMMAND...
cat >"$dir/agent" <<EOF
#!/bin/sh
host=\$1; shift
case "\$host" in h1) ns=$h1 ;; h2) ns=$h2 ;; *) echo "no host \$host" >&2; exit 255 ;; esac
exec ip netns exec "\$ns" unshare --uts /bin/sh -c "hostname \$host && \$*"
EOF
chmod +x "$dir/agent"
export OMPI_MCA_plm_rsh_agent=$dir/agent OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=10.77.0.0/24 \
  OMPI_MCA_oob_tcp_if_include=10.77.0.0/24 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# mpirun on h1; one process on each host.
on_two_hosts() {
  ip netns exec "$h1" unshare --uts /bin/sh -c 'hostname h1 && exec "$@"' sh \
    "$mpiexec" --host h1:1,h2:1 -np 2 "$program" "$@"
}
failed=0
check() {  # NAME COMMAND...: runs it, says ok or FAILED
  local name=$1; shift
  if "$@"; then echo "ok: $name"; else echo "FAILED: $name"; failed=1; fi
}

echo "== 2 hosts x 1 process against 1 process"
"$program" "$dir/one.safetensors" --micro-batch 12 >/dev/null
on_two_hosts "$dir/two.safetensors" --micro-batch 6
check "2 hosts equal 1 process" "$program" --compare "$dir/one.safetensors" "$dir/two.safetensors" 1e-5
for shard in optimizer_state gradients; do
  on_two_hosts "$dir/two_$shard.safetensors" --micro-batch 6 --shard "$shard"
  check "2 hosts sharding $shard equal 2 hosts unsharded" \
    "$program" --compare "$dir/two.safetensors" "$dir/two_$shard.safetensors" 0
done

echo "== the link cut mid-run"
epochs=40
on_two_hosts "$dir/ref.safetensors" --micro-batch 6 --shard optimizer_state --epochs $epochs
run="$dir/cut.safetensors"
on_two_hosts "$run" --micro-batch 6 --shard optimizer_state --epochs $epochs --checkpoints "$dir/ck" \
  --pause-ms 40 --timeout 10 --stderr-to-files >"$dir/cut.log" 2>&1 &
mpirun_pid=$!
for _ in $(seq 300); do
  [ "$(ls "$dir/ck" 2>/dev/null | grep -c '^checkpoint-[0-9]*\.safetensors$')" -ge 2 ] && break
  sleep 0.1
done
ip -n "$h1" link set "v${tag}a" down
cut=$SECONDS
pids=$(cat "$run".rank0.pid "$run".rank1.pid)
while [ $((SECONDS - cut)) -le 70 ] && kill -0 $pids 2>/dev/null; do sleep 1; done
# kill -0 fails once any of them is gone: wait for each.
for p in $pids; do while [ $((SECONDS - cut)) -le 70 ] && kill -0 "$p" 2>/dev/null; do sleep 1; done; done
stopped=$((SECONDS - cut))
echo "both processes stopped $stopped s after the cut"
check "both stop within 60 s" [ "$stopped" -le 60 ]
check "rank 0 names its peer" grep -q "rank 1 on h2" "$run.rank0.err"
check "rank 1 names its peer" grep -q "rank 0 on h1" "$run.rank1.err"
cat "$run".rank*.err
kill -9 $mpirun_pid 2>/dev/null
ip netns pids "$h2" | xargs -r kill -9 2>/dev/null
wait $mpirun_pid 2>/dev/null
last=$(ls "$dir/ck" | grep '^checkpoint-[0-9]*\.safetensors$' | sort | tail -1)
echo "the last checkpoint: $last"

echo "== the link back: the run continues"
ip -n "$h1" link set "v${tag}a" up
on_two_hosts "$dir/resumed.safetensors" --micro-batch 6 --shard optimizer_state --epochs $epochs \
  --checkpoints "$dir/ck" --resume
check "the resumed run ends with the uninterrupted run's bits" \
  "$program" --compare "$dir/ref.safetensors" "$dir/resumed.safetensors" 0
exit $failed
