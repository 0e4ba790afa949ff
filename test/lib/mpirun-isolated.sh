#!/bin/sh
# Runs mpirun (the command line given) with a private TMPDIR. Open MPI puts
# its session directory (ompi.<host>.<uid>) under TMPDIR, and two lit tests
# that start mpirun at the same moment under lit's shared TMPDIR race on
# creating it ("A call to mkdir was unable to create the desired directory
# ... File exists", orte_init fails). The exit status is mpirun's.
d=$(mktemp -d) || exit 1
TMPDIR=$d "$@"
rc=$?
rm -rf "$d"
exit $rc
