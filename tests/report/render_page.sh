#!/usr/bin/env bash
# Renders an HTML page in headless Chromium (Debian's `chromium`) and checks that it rendered: the
# screenshot is not blank (check_png.py counts its colours) and the rendered DOM holds the page's
# SVG figures. Exit 77 (a skip) with a message when Chromium is not installed
# (tools/install-deps.sh installs it for tools/test.sh).
# usage: render_page.sh PAGE.html MIN_SVGS WORKDIR
set -uo pipefail
page=$1 min_svgs=$2 workdir=$3

browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$browser" ]]; then
  echo "SKIP: chromium is not installed (apt-get install chromium, or tools/install-deps.sh)"
  exit 77
fi
rm -rf "$workdir" && mkdir -p "$workdir/profile" || exit 1
# As root Chromium needs --no-sandbox; a throw-away profile keeps runs apart; no network is needed.
flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --hide-scrollbars
       --user-data-dir="$workdir/profile" --window-size=1280,1600)
url="file://$(realpath "$page")"
timeout 50 "$browser" "${flags[@]}" --screenshot="$workdir/page.png" "$url" >"$workdir/chromium.log" 2>&1
rc=$?
if [[ $rc -ne 0 || ! -s "$workdir/page.png" ]]; then
  echo "FAIL: chromium exited $rc without a screenshot"; tail -20 "$workdir/chromium.log"; exit 1
fi
timeout 50 "$browser" "${flags[@]}" --dump-dom "$url" >"$workdir/dom.html" 2>>"$workdir/chromium.log"
svgs=$(grep -o '<svg' "$workdir/dom.html" | wc -l)
if [[ $svgs -lt $min_svgs ]]; then
  echo "FAIL: the rendered page holds $svgs SVG element(s), expected at least $min_svgs"; exit 1
fi
echo "rendered DOM: $svgs SVG element(s)"
# The Python with Pillow: the one on PATH, else Debian's (python3-pil installs there).
for python in python3 /usr/bin/python3; do
  if "$python" -c "import PIL" 2>/dev/null; then
    exec "$python" "$(dirname "$0")/check_png.py" "$workdir/page.png"
  fi
done
echo "SKIP: no python3 with Pillow (python3-pil; tools/install-deps.sh installs it)"
exit 77
