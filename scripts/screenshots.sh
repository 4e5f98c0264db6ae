#!/usr/bin/env bash
# Regenerates the report screenshots in docs/img (`make screenshots`): runs the tutorial's
# scenario and sweep (docs/tutorial.md, about 30 s on 2 cores), draws their reports, and photographs
# each report.html in headless Chromium.
#
#   scripts/screenshots.sh [OUT_DIR]     (default: docs/img)
#
# Needs Chromium (Debian: apt-get install chromium). The runs go to a temporary directory,
# removed at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/docs/img}
fctlab=$root/.venv/bin/fctlab
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
if [ -z "$browser" ]; then
  echo "screenshots.sh: error: no Chromium found (apt-get install chromium, or set CHROMIUM=/path/to/it)" >&2
  exit 2
fi
[ -x "$fctlab" ] || { echo "screenshots.sh: error: $fctlab missing: run make setup" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# snap HTML PNG HEIGHT: the top HEIGHT pixels of a page 1100 pixels wide. The flags keep the
# browser off the network (a closed machine otherwise sees it retry) and its profile in $work.
snap() {
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --disable-quic \
    --user-data-dir="$work/profile" --window-size="1100,$3" --screenshot="$2" "file://$1" \
    >"$work/browser.log" 2>&1 || { cat "$work/browser.log" >&2; exit 1; }
  [ -s "$2" ] || { echo "screenshots.sh: error: no screenshot written to $2" >&2; exit 1; }
  echo "wrote $2"
}

# quiet CMD...: runs CMD, showing its output only if it fails.
quiet() {
  "$@" >"$work/cmd.log" 2>&1 || { cat "$work/cmd.log" >&2; echo "screenshots.sh: error: $* failed" >&2; exit 1; }
}

# (Run from $work, so that the reports name their directories out/...)
cd "$work"
tut=$root/scenarios/tutorial
quiet "$fctlab" run "$tut/websearch.toml" --out out/first
quiet "$fctlab" report out/first --out out/first-report
quiet "$fctlab" sweep "$tut/study.toml" --out out/study
quiet "$fctlab" report out/study --out out/study-report
snap "$work/out/study-report/report.html" "$out/screenshot_sweep_report.png" 1900
snap "$work/out/first-report/report.html" "$out/screenshot_run_report.png" 1500
