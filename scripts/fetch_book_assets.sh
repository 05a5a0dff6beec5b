#!/usr/bin/env bash
# Vendors the JavaScript the book needs that no Python package ships: MathJax 3 (npm package `mathjax`).
# It lands in book/_vendor/ (gitignored), once; `make book` runs this before Sphinx, so the site never
# loads anything from a CDN. plotly.js comes from the plotly Python package at build time (book/_ext).
set -euo pipefail
cd "$(dirname "$0")/.."

MATHJAX_VERSION=${MATHJAX_VERSION:-3.2.2}
dest=book/_vendor/mathjax
stamp="$dest/.version"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$MATHJAX_VERSION" ]; then
    exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "fetch_book_assets: npm is needed once to fetch MathJax (apt-get install npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "mathjax@$MATHJAX_VERSION" >/dev/null && tar xzf "mathjax-$MATHJAX_VERSION.tgz")
rm -rf "$dest"
mkdir -p "$dest/input/tex"
# tex-svg.js draws with SVG paths, so it needs no font files; the TeX extensions it autoloads sit beside it.
cp "$tmp/package/es5/tex-svg.js" "$dest/"
cp -r "$tmp/package/es5/input/tex/extensions" "$dest/input/tex/"
cp "$tmp/package/LICENSE" "$dest/"
echo "$MATHJAX_VERSION" > "$stamp"
echo "fetch_book_assets: MathJax $MATHJAX_VERSION in $dest"
