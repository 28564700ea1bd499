# A small step runner for tools/setup.sh (sourced, not run). Steps run in the background with their
# output in a log file each; the terminal gets one line when a step starts (with whether its result is
# cached or it builds cold), a line every STEPS_TICK seconds naming what still runs (and the last line of
# its log), one line when it ends, and a table of step times at the end. A failed step prints the end
# of its log. Steps wait for the steps they name with `--after`.
#
#   steps_init LOG_DIR
#   step NAME STATE DESCRIPTION [--after NAME,...] -- COMMAND...   (STATE: cached or cold)
#   steps_run            runs every step; returns 1 when any failed (or could not start)
#   steps_summary        the table (also written to LOG_DIR/summary.txt)

# Ctrl-C (or TERM) stops every step (each runs in a session of its own, so its whole process tree goes)
# and the ticker, then exits 130.
if [ "${BASH_VERSINFO[0]}" -lt 5 ] || { [ "${BASH_VERSINFO[0]}" -eq 5 ] && [ "${BASH_VERSINFO[1]}" -lt 1 ]; }; then
  echo "steps: bash >= 5.1 is needed (wait -n -p), this is $BASH_VERSION" >&2
  exit 2
fi
STEPS_TICK="${STEPS_TICK:-30}"
STEPS_TICKER=""
declare -a STEP_NAMES=()
declare -A STEP_STATE=() STEP_DESC=() STEP_AFTER=() STEP_CMD=() STEP_PID=() STEP_BEGAN=() STEP_SECS=() STEP_RESULT=()
declare -A STEP_BY_PID=()

steps_init() {
  STEPS_DIR="$1"
  STEPS_T0=$SECONDS
  mkdir -p "$STEPS_DIR"
  rm -f "$STEPS_DIR"/*.log "$STEPS_DIR"/*.running "$STEPS_DIR/summary.txt"
}

_steps_clock() { local s=$((SECONDS - STEPS_T0)); printf '%2d:%02d' $((s / 60)) $((s % 60)); }
steps_say() { printf '[%s] %s\n' "$(_steps_clock)" "$*"; }

step() {
  local name="$1" state="$2" desc="$3" after=""
  shift 3
  if [ "${1:-}" = --after ]; then after="$2"; shift 2; fi
  [ "${1:-}" = -- ] && shift
  STEP_NAMES+=("$name")
  STEP_STATE[$name]="$state"
  STEP_DESC[$name]="$desc"
  STEP_AFTER[$name]="${after//,/ }"
  STEP_CMD[$name]="$(printf '%q ' "$@")"
  STEP_RESULT[$name]=pending
}

_step_start() {
  local name="$1"
  STEP_BEGAN[$name]=$SECONDS
  STEP_RESULT[$name]=running
  : >"$STEPS_DIR/$name.running"
  steps_say "$name: start (${STEP_STATE[$name]}): ${STEP_DESC[$name]}"
  # Not a process-group leader (no job control), so setsid makes the session without forking: $! is its id.
  setsid bash -c "${STEP_CMD[$name]}" >"$STEPS_DIR/$name.log" 2>&1 </dev/null &
  STEP_PID[$name]=$!
  STEP_BY_PID[$!]="$name"
}

# The pending steps whose --after steps all succeeded start; those with a failed one are not run.
_steps_start_ready() {
  local name dep ready
  for name in "${STEP_NAMES[@]}"; do
    [ "${STEP_RESULT[$name]}" = pending ] || continue
    ready=true
    for dep in ${STEP_AFTER[$name]}; do
      case "${STEP_RESULT[$dep]}" in
        ok) ;;
        failed | not-run) STEP_RESULT[$name]=not-run; STEP_SECS[$name]=0
          steps_say "$name: not run ($dep did not succeed)"; ready=false; break ;;
        *) ready=false ;;
      esac
    done
    if $ready; then _step_start "$name"; fi
  done
}

# Every STEPS_TICK seconds: what still runs, for how long, and the last line its log has.
# Its sleep must not hold the terminal's pipe open (a `| tee` would wait for it) nor outlive the kill.
_steps_ticker() {
  local f name last began nap="" parent="$1"
  trap 'kill $nap 2>/dev/null; exit 0' TERM
  while kill -0 "$parent" 2>/dev/null; do
    sleep "$STEPS_TICK" >/dev/null 2>&1 </dev/null &
    nap=$!
    wait "$nap"
    for f in "$STEPS_DIR"/*.running; do
      began="$(stat -c %Y "$f" 2>/dev/null)" || continue # ended just now
      name="$(basename "$f" .running)"
      last="$(tail -n 1 "$STEPS_DIR/$name.log" 2>/dev/null | tr -d '\r' | cut -c1-110)"
      steps_say "$name: running ($(($(date +%s) - began)) s)${last:+: $last}"
    done
  done
}

# Stops the running steps' sessions and the ticker (Ctrl-C, TERM, or the script ending early).
_steps_stop_all() {
  local name
  for name in "${STEP_NAMES[@]}"; do
    if [ "${STEP_RESULT[$name]}" = running ]; then
      kill -TERM -- "-${STEP_PID[$name]}" 2>/dev/null || true
      STEP_RESULT[$name]=stopped
      STEP_SECS[$name]=$((SECONDS - STEP_BEGAN[$name]))
      rm -f "$STEPS_DIR/$name.running"
    fi
  done
  if [ -n "$STEPS_TICKER" ]; then kill "$STEPS_TICKER" 2>/dev/null || true; STEPS_TICKER=""; fi
}

_steps_interrupted() {
  trap - INT TERM
  echo
  steps_say "interrupted ($1): stopping the running steps"
  _steps_stop_all
  steps_summary
  exit 130
}

steps_run() {
  local pid rc name dep running failed=0
  for name in "${STEP_NAMES[@]}"; do
    for dep in ${STEP_AFTER[$name]}; do
      [ -n "${STEP_RESULT[$dep]:-}" ] || { echo "steps: $name runs --after $dep, which is no step" >&2; return 2; }
    done
  done
  trap '_steps_interrupted INT' INT
  trap '_steps_interrupted TERM' TERM
  trap '_steps_stop_all' EXIT
  _steps_ticker "$$" &
  STEPS_TICKER=$!
  _steps_start_ready
  while :; do
    running=()
    for name in "${STEP_NAMES[@]}"; do [ "${STEP_RESULT[$name]}" = running ] && running+=("${STEP_PID[$name]}"); done
    [ ${#running[@]} -gt 0 ] || break
    pid=""
    wait -n -p pid "${running[@]}" && rc=0 || rc=$?
    [ -n "${pid:-}" ] || continue # woken by a signal: its trap ran
    name="${STEP_BY_PID[$pid]}"
    rm -f "$STEPS_DIR/$name.running"
    STEP_SECS[$name]=$((SECONDS - STEP_BEGAN[$name]))
    if [ "$rc" -eq 0 ]; then
      STEP_RESULT[$name]=ok
      steps_say "$name: done in ${STEP_SECS[$name]} s"
    else
      STEP_RESULT[$name]=failed
      failed=1
      steps_say "$name: FAILED (exit $rc) after ${STEP_SECS[$name]} s; the end of $STEPS_DIR/$name.log:"
      tail -n 40 "$STEPS_DIR/$name.log" | sed 's/^/    /'
    fi
    _steps_start_ready
  done
  kill "$STEPS_TICKER" 2>/dev/null || true
  wait "$STEPS_TICKER" 2>/dev/null || true
  STEPS_TICKER=""
  trap - INT TERM EXIT
  for name in "${STEP_NAMES[@]}"; do [ "${STEP_RESULT[$name]}" = ok ] || failed=1; done
  return $failed
}

steps_summary() {
  local name
  {
    printf '%-14s %-7s %8s  %-8s %s\n' step state seconds result what
    for name in "${STEP_NAMES[@]}"; do
      printf '%-14s %-7s %8s  %-8s %s\n' "$name" "${STEP_STATE[$name]}" "${STEP_SECS[$name]:-0}" "${STEP_RESULT[$name]}" "${STEP_DESC[$name]}"
    done
    printf 'total %d s (steps run side by side where they can); logs in %s\n' $((SECONDS - STEPS_T0)) "$STEPS_DIR"
  } | tee "$STEPS_DIR/summary.txt"
}
