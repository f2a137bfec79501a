#!/bin/bash
# A rank that raises, is killed, or hangs must not leave the others waiting, in training or before
# it: the whole run ends within 60 s with a status other than 0 and a message naming the rank. A signal that reaches one
# rank stops every rank at the same window's close, with a checkpoint the run continues from.
#   test_failures.sh MPIEXEC FAILING_RANK_PROGRAM
set -u
mpiexec=$1 program=$2
failed=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for mode in raise kill hang signal resume early uncaught stall; do
  start=$(date +%s)
  output=$(timeout 90 "$mpiexec" -np 2 "$program" "$mode" "$dir" 2>&1)
  status=$? seconds=$(( $(date +%s) - start ))
  case $mode in
    raise) expected="rank 1 of 2: .*an error injected on rank 1" ;;
    kill) expected="rank 1 .*(exited on signal 9|Killed)" ;;
    hang) expected="rank 0: allreduce_sum .*did not finish within 5 s" ;;
    # Rank 1's SIGTERM came in micro-batch 6; the window of micro-batches 5 to 8 closes on both.
    signal) expected="rank 0: training stopped by SIGTERM after micro-batch 8/500 .*checkpoint-0000000008" ;;
    resume) expected="resuming from .*checkpoint-0000000008.safetensors: epoch 1/1, micro-batch 9/500" ;;
    # Rank 1 fails before training; rank 0 waits in fit's first collective.
    early) expected="rank 1 of 2: MPI_Finalize waited 10 s for the other processes, which did not come" ;;
    uncaught) expected="rank 1 of 2: uncaught exception: an error injected on rank 1 before training" ;;
    stall) expected="rank 0 of 2: a collective call did not finish earlier" ;;
  esac
  verdict=ok
  if [ "$status" -eq 124 ] || [ "$seconds" -gt 60 ] || ! grep -Eq "$expected" <<<"$output" ||
     { [ "$mode" = resume ] && [ "$status" -ne 0 ]; } || { [ "$mode" != resume ] && [ "$status" -eq 0 ]; } ||
     { [ "$mode" = signal ] && ! grep -Eq "rank 1: training stopped by SIGTERM after micro-batch 8/500" <<<"$output"; }; then
    verdict=FAILED failed=1
  fi
  printf '%-6s status %3d after %2d s: %s\n' "$mode" "$status" "$seconds" "$verdict"
  [ "$verdict" = ok ] || printf 'expected /%s/ in:\n%s\n' "$expected" "$output"
done
exit $failed
