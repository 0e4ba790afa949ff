#!/usr/bin/env bash
#===- scripts/kill-resume-loop.sh - kill -9 / --resume cycles --------------===#
#
# usage: scripts/kill-resume-loop.sh BUILD_DIR [CYCLES] [STEPS]
#
# Trains the runtime's fake data-parallel model (2 ranks, 2 parameters,
# AdamW) for STEPS steps (default 50) with a checkpoint after every step,
# kills pipeopt-run with SIGKILL at a random time (uniform over the length
# of an uninterrupted run, so kills land in compute, in the middle of a
# checkpoint, between the rename and `latest`, ...), resumes from the
# checkpoint directory, and repeats until CYCLES kills (default 100) were
# made. A run that finishes before its kill is compared with the reference
# and training starts over. At the end the last training is resumed to
# completion and its weights, optimizer state, losses and optimizer.json are
# compared byte for byte (cmp) with an uninterrupted run. Prints
# "N cycles, identical" and exits 0, or names the first difference and
# exits 1.
#
# BUILD_DIR: a runtime build (cmake -S runtime -B BUILD_DIR: bin/pipeopt-run,
# test/fake_model.so) or a top-level build (bin/, runtime/test/).
#
#===----------------------------------------------------------------------===#
set -euo pipefail

if [[ $# -lt 1 || $# -gt 3 ]]; then
  echo "usage: $0 BUILD_DIR [CYCLES (default 100)] [STEPS (default 50)]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
cycles=${2:-100}
steps=${3:-50}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

run=$build/bin/pipeopt-run
diff=$build/bin/pipeopt-npy-diff
model=
for m in "$build/test/fake_model.so" "$build/runtime/test/fake_model.so"; do
  [[ -f $m ]] && model=$m && break
done
for f in "$run" "$diff"; do
  [[ -x $f ]] || { echo "$0: no $f (build the runtime first)" >&2; exit 2; }
done
[[ -n $model ]] || { echo "$0: no fake_model.so under $build" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/kill-resume.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The data-parallel fake manifest, trained with AdamW (optimizer state and a
# step count that must survive every resume).
sed 's/"training": {"optimizer": "sgd", "lr": 0.1}/"training": {"optimizer": "adamw", "lr": 0.01, "weight_decay": 0.1}/' \
  "$src/runtime/test/fake_pdp.manifest.json" >"$work/model.manifest.json"
grep -q adamw "$work/model.manifest.json"
"$diff" --make-inputs "$work/model.manifest.json" "$work/in" --seed 7
common=("$run" "$model" --manifest "$work/model.manifest.json"
        --input "0=$work/in/input_0.npy" --input "1=$work/in/input_1.npy"
        --input "2=$work/in/input_2.npy" --quiet --timeout-s 30
        --steps "$steps")
files=(weight_1.npy weight_2.npy adam_m_1.npy adam_m_2.npy adam_v_1.npy
       adam_v_2.npy loss.npy optimizer.json)

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# The reference, uninterrupted, with the same checkpoints (its length sets
# the range of the kill times).
t0=$(now_ms)
"${common[@]}" --checkpoint-dir "$work/ref-ck" --checkpoint-every 1 \
  --output-dir "$work/ref"
span=$(( $(now_ms) - t0 ))
(( span > 0 )) || span=1

same_as_reference() { # DIR
  local f
  for f in "${files[@]}"; do
    if ! cmp -s "$1/$f" "$work/ref/$f"; then
      echo "$0: $1/$f differs from the uninterrupted run's" >&2
      return 1
    fi
  done
}

ck=$work/ck
out=$work/out
# bash reports every SIGKILLed job ("Killed ...") on stderr: keep the
# script's own messages on fd 3.
exec 3>&2 2>/dev/null
kills=0 finished=0 attempts=0 fallbacks=0 resumes=0 midcheckpoint=0
while (( kills < cycles )); do
  attempts=$((attempts + 1))
  if (( attempts > 20 * cycles + 100 )); then
    echo "$0: only $kills kills in $attempts runs" >&3
    exit 1
  fi
  # Killed after the last checkpoint but before the outputs: nothing is left
  # to resume (pipeopt-run says so); start that training over.
  if [[ -f $ck/latest && $(cat "$ck/latest") == "step-$steps" ]]; then
    rm -rf "$ck"
  fi
  args=()
  [[ -n $(ls -d "$ck"/step-* 2>/dev/null) ]] && args=(--resume "$ck") &&
    resumes=$((resumes + 1))
  rm -rf "$out"
  "${common[@]}" "${args[@]}" --checkpoint-dir "$ck" --checkpoint-every 1 \
    --output-dir "$out" >"$work/log" 2>&1 &
  pid=$!
  delay=$(( (RANDOM * 32768 + RANDOM) % span ))
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  killed=0
  if kill -9 "$pid" 2>/dev/null; then
    killed=1
  fi
  # Killed while a checkpoint was being written: the newest entry of the
  # checkpoint directory is a temporary (tmp-<k>, .latest.tmp.*, old-<k>).
  if (( killed )) && [[ $(ls -At "$ck" 2>/dev/null | head -1) =~ ^(tmp-|\.latest\.tmp|old-) ]]; then
    midcheckpoint=$((midcheckpoint + 1))
  fi
  rc=0
  { wait "$pid"; } 2>/dev/null || rc=$?
  if grep -q "pipeopt-run: warning: --resume" "$work/log"; then
    fallbacks=$((fallbacks + 1))
  fi
  if (( rc == 0 )); then
    # It finished before the kill: a complete training to check.
    same_as_reference "$out" || { cat "$work/log" >&3; exit 1; }
    finished=$((finished + 1))
    rm -rf "$ck" "$out"
  elif (( killed && rc == 137 )); then
    kills=$((kills + 1))
  else
    echo "$0: pipeopt-run failed (exit $rc) in cycle $((kills + 1)):" >&3
    cat "$work/log" >&3
    exit 1
  fi
done

# Finish the last training without a kill.
if [[ -f $ck/latest && $(cat "$ck/latest") == "step-$steps" ]]; then
  rm -rf "$ck"
fi
args=()
[[ -n $(ls -d "$ck"/step-* 2>/dev/null) ]] && args=(--resume "$ck")
rm -rf "$out"
if ! "${common[@]}" "${args[@]}" --checkpoint-dir "$ck" --checkpoint-every 1 \
     --output-dir "$out" >"$work/log" 2>&1; then
  echo "$0: the final resume failed:" >&3
  cat "$work/log" >&3
  exit 1
fi
same_as_reference "$out"
if grep -q "pipeopt-run: warning: --resume" "$work/log"; then
  fallbacks=$((fallbacks + 1))
  [[ -n ${KILL_RESUME_VERBOSE:-} ]] && grep "warning" "$work/log" >&3
fi
echo "$kills cycles, identical ($resumes resumes, $midcheckpoint kills left a checkpoint half-written, $fallbacks resume(s) fell back to an older checkpoint, $finished trainings finished between kills and matched; $steps steps, a checkpoint every step, kill times uniform in 0-${span} ms)"
