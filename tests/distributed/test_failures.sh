#!/bin/bash
# A rank that raises, is killed, or hangs must not leave the others waiting: the whole run ends
# within 60 s with a status other than 0 and a message naming the rank.
#   test_failures.sh MPIEXEC FAILING_RANK_PROGRAM
set -u
mpiexec=$1 program=$2
failed=0
for mode in raise kill hang; do
  start=$(date +%s)
  output=$(timeout 90 "$mpiexec" -np 2 "$program" "$mode" 2>&1)
  status=$? seconds=$(( $(date +%s) - start ))
  case $mode in
    raise) expected="rank 1 of 2: .*an error injected on rank 1" ;;
    kill) expected="rank 1 .*(exited on signal 9|Killed)" ;;
    hang) expected="rank 0: allreduce_sum .*did not finish within 5 s" ;;
  esac
  verdict=ok
  if [ "$status" -eq 0 ] || [ "$status" -eq 124 ] || [ "$seconds" -gt 60 ] ||
     ! grep -Eq "$expected" <<<"$output"; then
    verdict=FAILED failed=1
  fi
  printf '%-6s status %3d after %2d s: %s\n' "$mode" "$status" "$seconds" "$verdict"
  [ "$verdict" = ok ] || printf 'expected /%s/ in:\n%s\n' "$expected" "$output"
done
exit $failed
