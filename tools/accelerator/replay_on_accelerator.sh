#!/usr/bin/env bash
# Record, cross-check and replay the golden entries of an accelerator (a GPU or a TPU) on a machine
# that has one, in one run of under eight minutes, and write what it found to OUT_DIR (see
# docs/harness.md, "accelerator goldens"):
#
#   tools/accelerator/replay_on_accelerator.sh OUT_DIR --platform=cuda|rocm|tpu|cpu
#       [--wheels=DIR] [--cases=EXPR] [--corpus-files=A,B] [--budget-s=SECONDS] [--jobs=N]
#
# Steps, each under its own time limit (`timeout`), all of them within --budget-s (default 420):
#   install       pip install --no-deps --no-build-isolation -e . (the machine's own packages;
#                 nothing downloaded; a --platform=cpu run only tries it, with --dry-run); with
#                 --wheels=DIR, first the wheels in DIR (what the machine lacks, e.g. flatbuffers)
#                 into a folder of the run, from DIR alone
#   probe         jax's version, backend and devices, and the host record of the platform
#   cases         how many registered cases the platform has (none yet: the store steps say so)
#   seed          the repository's compat_data/<platform>/ copied into a temporary store
#   record        pytest harness/ --platform=<platform> --record into that store
#   crosscheck    every recorded output against the same case on the CPU (_accelerator_run.py)
#   replay        pytest harness/ --platform=<platform> on that store, both readers
#   corpus-import jaxport import-jax-testdata: the installed jax's own <platform> datasets
#   corpus        pytest harness/ --platform=<platform> on them, with numerics
# then the summary, whatever the steps did: OUT_DIR/entries.tar.gz (the new entries, under
# compat_data/; unpack it at the repository root), accelerator-report.json (per stable target: its
# entry, cross-check and replay, or why there is none), accelerator-run.log, crosscheck.json and
# the harness's compat-record.json, compat-replay.json and compat-corpus.json. Exit status 0 when
# everything passed, 1 when something did not (the report says what), 2 on bad arguments.
#
# On a TPU every step that opens the chip runs after the last one ended (one process at a time
# can hold it), pytest runs without -n, and the cross-check computes on the CPU alone.
# --platform=cpu (or JAXPORT_ACCELERATOR_PLATFORM=cpu) runs the same steps on the CPU into a
# temporary store: a dry run of the script where no accelerator is. --cases=EXPR selects cases
# (pytest -k) and --corpus-files names corpus files, to make a run short; both skip the coverage
# verdicts.
set -uo pipefail

usage() {
  sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit "${1:-2}"
}

fail_usage() {
  echo "replay_on_accelerator.sh: $1" >&2
  echo "usage: tools/accelerator/replay_on_accelerator.sh OUT_DIR --platform=cuda|rocm|tpu|cpu [--wheels=DIR] [--cases=EXPR] [--corpus-files=A,B] [--budget-s=SECONDS] [--jobs=N]" >&2
  exit 2
}

out=""
platform="${JAXPORT_ACCELERATOR_PLATFORM:-}"
cases=""
corpus_files=""
budget=420
jobs=""
wheels=""
for arg in "$@"; do
  case "$arg" in
    --platform=*) platform="${arg#*=}" ;;
    --wheels=*) wheels="${arg#*=}" ;;
    --cases=*) cases="${arg#*=}" ;;
    --corpus-files=*) corpus_files="${arg#*=}" ;;
    --budget-s=*) budget="${arg#*=}" ;;
    --jobs=*) jobs="${arg#*=}" ;;
    -h|--help) usage 0 ;;
    -*) fail_usage "unknown option $arg" ;;
    *)
      [ -z "$out" ] || fail_usage "one OUT_DIR only (got $out and $arg)"
      out="$arg" ;;
  esac
done
[ -n "$out" ] || fail_usage "name the output folder OUT_DIR"
case "$platform" in
  cuda|rocm|tpu|cpu) ;;
  "") fail_usage "name the platform: --platform=cuda, rocm or tpu (on such a machine), or cpu (a dry run)" ;;
  *) fail_usage "--platform=$platform: expected cuda or rocm (a GPU), tpu, or cpu (a dry run)" ;;
esac
if [ -n "$wheels" ]; then
  [ -d "$wheels" ] && compgen -G "$wheels/*.whl" >/dev/null \
    || fail_usage "--wheels=$wheels: expected a folder holding the wheels to install (*.whl)"
  wheels="$(cd "$wheels" && pwd)"
fi
[[ "$budget" =~ ^[0-9]+$ ]] && [ "$budget" -ge 60 ] && [ "$budget" -le 3600 ] \
  || fail_usage "--budget-s=$budget: expected whole seconds from 60 to 3600"
[ -z "$jobs" ] || [[ "$jobs" =~ ^[0-9]+$ ]] || fail_usage "--jobs=$jobs: expected a whole number"
if [ -e "$out" ] && { [ ! -d "$out" ] || [ -n "$(ls -A "$out")" ]; }; then
  fail_usage "$out exists and is not an empty folder; name a new or empty one"
fi
mkdir -p "$out" || fail_usage "cannot create $out"
out="$(cd "$out" && pwd)"
# The Python of the machine's jax: $PYTHON, else python, else python3 (an image may have only that).
py="${PYTHON:-$(command -v python || command -v python3)}"
[ -n "$py" ] || fail_usage "no python or python3 on PATH; set PYTHON"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo" || exit 2

work="$(mktemp -d -t jaxport-accelerator-run.XXXXXX)"
log="$out/accelerator-run.log"
today="$(date -u +%F)"
deadline=$((SECONDS + budget))
reserve=25 # seconds kept for the summary
: >"$work/steps.tsv"

say() { echo "$*" | tee -a "$log"; }

# step NAME LIMIT_S COMMAND...: run COMMAND under `timeout`, at most LIMIT_S seconds (of the
# default 420-second budget; scaled with --budget-s) and never past the run's deadline; its output
# goes to the log (stdout to $STEP_STDOUT when set).
step() {
  local name=$1 limit=$(($2 * budget / 420))
  shift 2
  local left=$((deadline - reserve - SECONDS))
  if [ "$left" -lt 5 ]; then
    printf '%s\t124\t0\t0\n' "$name" >>"$work/steps.tsv"
    say "== $name: not run, the run's time is spent"
    return 124
  fi
  [ "$limit" -le "$left" ] || limit=$left
  say "== $name (at most ${limit}s): $*"
  local start=$SECONDS rc
  if [ -n "${STEP_STDOUT:-}" ]; then
    timeout --kill-after=5 "$limit" "$@" >"$STEP_STDOUT" 2>>"$log"
  else
    timeout --kill-after=5 "$limit" "$@" >>"$log" 2>&1
  fi
  rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - start))" "$limit" >>"$work/steps.tsv"
  say "   $name: exit $rc after $((SECONDS - start))s"
  return "$rc"
}

finished=0
finish() {
  [ "$finished" = 1 ] && return
  finished=1
  say "== summary"
  JAX_PLATFORMS=cpu timeout 60 "$py" tools/accelerator/_accelerator_run.py summarize \
    --work "$work" --out "$out" --platform "$platform" ${cases:+--cases "$cases"} >>"$log" 2>&1
  status=$?
  if [ ! -f "$out/accelerator-report.json" ]; then
    printf '{"format": 1, "platform": "%s", "ok": false, "problems": ["the summary step failed (exit %s); see accelerator-run.log"]}\n' \
      "$platform" "$status" >"$out/accelerator-report.json"
    status=1
  fi
  [ "$status" -le 1 ] || status=1
  grep '^summary: ' "$log" | tail -n 1
  [ -n "${KEEP_WORK:-}" ] && say "work folder kept: $work" || rm -rf "$work"
}
# bash runs this once the step in progress ends (its own limit bounds the wait): give the
# command that starts the script a limit some seconds above --budget-s.
trap 'finish; exit 143' TERM INT

say "replay_on_accelerator.sh: platform $platform, today $today, budget ${budget}s, output $out"
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
case "$platform" in
  cpu) export JAX_PLATFORMS=cpu ;;
  # Every process of the run shares a GPU: none may take most of its memory up front.
  cuda|rocm) export XLA_PYTHON_CLIENT_PREALLOCATE=false ;;
esac

if [ -n "$wheels" ]; then
  # Wheels from DIR alone, into a folder of the run placed after the machine's own packages
  # (its jax stays first); pip installs wheels without the `wheel` package.
  step wheels 60 env PIP_CONFIG_FILE=/dev/null "$py" -m pip install --isolated --no-index \
    --no-deps --no-compile --no-cache-dir --target "$work/site" "$wheels"/*.whl
  export PYTHONPATH="$PYTHONPATH:$work/site"
fi
dry=()
[ "$platform" = cpu ] && dry=(--dry-run)
step install 90 "$py" -m pip install --no-deps --no-build-isolation --no-index "${dry[@]}" -e .
if ! "$py" -c 'import sys, importlib.metadata as m
sys.exit(0 if any(e.value == "jaxport_pytest" for e in m.entry_points(group="pytest11")) else 1)'; then
  # Not installed: the plugin is loaded by name, jaxport comes from this checkout.
  export PYTEST_PLUGINS=jaxport_pytest
  say "   jaxport's pytest plugin is not installed: loading it with PYTEST_PLUGINS"
fi

step probe 60 "$py" -c "
import jax, jaxport
from jaxport.harness._worker import _device_probe
from jaxport.golden._host import current_host
print('jax', jax.__version__, 'backend', jax.default_backend(), jax.devices())
print('harness platform', _device_probe.probe().platform)
print('host', current_host('$platform').to_json())"

# The registered cases of the platform, counted on the CPU (no device is opened for it).
STEP_STDOUT="$work/cases.txt" step cases 30 env JAX_PLATFORMS=cpu "$py" -c "
import harness.cases as c
print(len(c.cases_for('$platform')))"
ncases="$(tail -n 1 "$work/cases.txt" 2>/dev/null)"
[[ "$ncases" =~ ^[0-9]+$ ]] || ncases=""
mkdir -p "$work/store"
if [ -d "compat_data/$platform" ]; then
  step seed 30 cp -R "compat_data/$platform" "$work/store/"
fi

selection=()
[ -z "$cases" ] || selection=(-k "$cases")
# xdist workers for the replays: four on a GPU machine (they share the device), none on the CPU
# or a TPU (one process at a time holds the chip: the harness refuses -n there).
if [ -z "$jobs" ]; then
  case "$platform" in cuda|rocm) jobs=4 ;; *) jobs=0 ;; esac
fi
parallel=()
if [ "$jobs" -gt 0 ] && "$py" -c 'import xdist' 2>/dev/null; then
  parallel=(-n "$jobs")
fi
harness=("$py" -m pytest harness/test_replay.py "--platform=$platform" "--compat-today=$today"
         -q -p no:cacheprovider -p no:randomly)

if [ "$ncases" = 0 ]; then
  say "== record, crosscheck, replay: not run: no $platform cases are registered yet"
  printf '%s\t%s\t0\t0\n' record none crosscheck none replay none >>"$work/steps.tsv"
else
  step record 120 "${harness[@]}" --record "--compat-store=$work/store" \
    "--compat-report=$work/compat-record.json" "${selection[@]}"
  # The CPU result, computed with jax held to the CPU (on a TPU the chip stays closed).
  step crosscheck 80 env JAX_PLATFORMS=cpu "$py" tools/accelerator/_accelerator_run.py \
    crosscheck --store "$work/store" --platform "$platform" --out "$work/crosscheck.json" \
    --record-report "$work/compat-record.json"
  step replay 120 "${harness[@]}" "--compat-store=$work/store" \
    "--compat-report=$work/compat-replay.json" "${selection[@]}" "${parallel[@]}"
fi

corpus_dir="$(JAX_PLATFORMS=cpu "$py" -c 'from jaxport.harness._controller._jax_corpus import corpus_dir; print(corpus_dir())' 2>>"$log")"
sources=("$corpus_dir")
if [ -n "$corpus_files" ]; then
  IFS=, read -r -a names <<<"$corpus_files"
  sources=()
  for name in "${names[@]}"; do sources+=("$corpus_dir/$name"); done
fi
STEP_STDOUT="$work/corpus-import.json" step corpus-import 45 env JAX_PLATFORMS=cpu "$py" -c \
  'import sys; from jaxport.cli import main; sys.exit(main(sys.argv[1:]))' \
  import-jax-testdata "${sources[@]}" --out "$work/corpus" --platform "$platform" \
  --host-platform "$platform" --json
# -k selects every imported entry (their ids start with the platform): the run is then not
# judged for this repository's coverage, which jax's corpus does not promise.
step corpus 180 "${harness[@]}" "--compat-store=$work/corpus" \
  "--compat-report=$work/compat-corpus.json" -k "$platform" "${parallel[@]}"

finish
exit "$status"
