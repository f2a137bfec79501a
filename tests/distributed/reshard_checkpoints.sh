#!/usr/bin/env bash
# A sharded run's checkpoints continued on another number of processes: 2 processes write (their
# optimizer shards and the checkpoints naming them), 3 continue every checkpoint, sharded and not;
# then 3 write and 2 continue. Usage: reshard_checkpoints.sh MPIEXEC TEST_PROGRAM
set -euo pipefail
mpiexec=$1 program=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for pair in "2 3" "3 2"; do
  read -r writers readers <<<"$pair"
  rm -rf "${dir:?}"/*
  echo "== $writers processes write, $readers continue"
  ACCRUE_RESHARD_DIR=$dir "$mpiexec" -np "$writers" "$program" --run_test=write_for_another_count --log_level=message
  ACCRUE_RESHARD_DIR=$dir ACCRUE_RESHARD_WRITERS=$writers \
    "$mpiexec" -np "$readers" "$program" --run_test=resume_on_another_count --log_level=message
done
