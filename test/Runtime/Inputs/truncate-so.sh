#!/usr/bin/env bash
#===- truncate-so.sh - pipeopt-run on truncated copies of a model .so ----===#
#
# For every SIZE, copies the first SIZE bytes of MODEL.so (and its manifest)
# to OUTDIR/tSIZE.so, runs pipeopt-run on it and prints
#   size SIZE: exit CODE
# SIZE is a byte count, "half" (half of the file) or "-N" (all but the last
# N bytes); it is printed as given, the file name has the byte count.
# followed by pipeopt-run's output. A model cut short used to be mapped by
# dlopen past the end of the file and killed pipeopt-run with SIGBUS
# (exit 135); it must be a clear error with exit code 2.
#
# usage: truncate-so.sh RUN MODEL.so OUTDIR MPIRUN SIZE...
#   RUN     path of pipeopt-run
#   MPIRUN  mpirun command line ("none": loopback only); with it, every
#           size is also run under "MPIRUN -np <num_ranks> ... --comm mpi"
#
#===----------------------------------------------------------------------===#
set -uo pipefail
if [ $# -lt 5 ]; then
  sed -n '2,/^#====/p' "$0" >&2
  exit 2
fi
RUN=$1 MODEL=$2 OUT=$3 MPIRUN=$4
shift 4
[ "$MPIRUN" = none ] && MPIRUN=""
mkdir -p "$OUT"
manifest=${MODEL%.so}.manifest.json
ranks=$(sed -n 's/.*"num_ranks": *\([0-9]*\).*/\1/p' "$manifest")
total=$(stat -c %s "$MODEL")
for arg in "$@"; do
  case $arg in
    half) size=$((total / 2)) ;;
    -*) size=$((total + arg)) ;;
    *) size=$arg ;;
  esac
  head -c "$size" "$MODEL" > "$OUT/t$size.so"
  cp "$manifest" "$OUT/t$size.manifest.json"
  out=$("$RUN" "$OUT/t$size.so" --timeout-s 20 2>&1)
  echo "size $arg: exit $?"
  echo "$out"
  if [ -n "$MPIRUN" ]; then
    # shellcheck disable=SC2086
    out=$($MPIRUN -np "$ranks" "$RUN" "$OUT/t$size.so" --comm mpi \
      --timeout-s 20 2>&1)
    echo "size $arg mpi: exit $?"
    echo "$out" | grep 'pipeopt-run' | sort -u
  fi
done
