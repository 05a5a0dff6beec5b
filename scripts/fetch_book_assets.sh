#!/usr/bin/env bash
# Vendors the JavaScript the book and the slides need that no Python package ships: MathJax 3 (npm package
# `mathjax`) and reveal.js (npm package `reveal.js`, for `make slides`). They land in book/_vendor/ and book/_slides_vendor/ (gitignored),
# once; `make book` and `make slides` run this first, so nothing is ever loaded from a CDN. plotly.js comes from
# the plotly Python package at build time (book/_ext, scripts/build_slides.py).
set -euo pipefail
cd "$(dirname "$0")/.."

MATHJAX_VERSION=${MATHJAX_VERSION:-3.2.2}
REVEAL_VERSION=${REVEAL_VERSION:-5.2.1}

# reveal.js: the library, its reset and core CSS, the themes (with their bundled fonts) and the notes plugin
reveal=book/_slides_vendor/reveal  # not in book/_vendor: that folder is copied into the site
if [ ! -f "$reveal/.version" ] || [ "$(cat "$reveal/.version")" != "$REVEAL_VERSION" ]; then
    command -v npm >/dev/null 2>&1 || { echo "fetch_book_assets: npm is needed once to fetch reveal.js (apt-get install npm)" >&2; exit 1; }
    tmp_reveal=$(mktemp -d)
    (cd "$tmp_reveal" && npm pack --silent "reveal.js@$REVEAL_VERSION" >/dev/null && tar xzf "reveal.js-$REVEAL_VERSION.tgz")
    rm -rf "$reveal"
    mkdir -p "$reveal/plugin/notes"
    cp "$tmp_reveal/package/dist/reveal.js" "$tmp_reveal/package/dist/reveal.css" "$tmp_reveal/package/dist/reset.css" "$reveal/"
    cp -r "$tmp_reveal/package/dist/theme" "$reveal/"
    cp "$tmp_reveal/package/plugin/notes/notes.js" "$reveal/plugin/notes/"
    cp "$tmp_reveal/package/LICENSE" "$reveal/"
    rm -rf "$tmp_reveal"
    echo "$REVEAL_VERSION" > "$reveal/.version"
    echo "fetch_book_assets: reveal.js $REVEAL_VERSION in $reveal"
fi

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
