#!/usr/bin/env bash
# Vendor the website's JavaScript so the built site reads fully offline:
#   MathJax 3 (tex-chtml + fonts + extensions), RequireJS and the Jupyter widget manager
#   (@jupyter-widgets/html-manager, embed-amd.js + its fonts), and vega, vega-lite and
#   vega-embed (the explorers' live charts, see CONTRIBUTING.md).
# And, for the browser suite only, axe-core (the accessibility checker that
# tests/site/test_accessibility.py runs on every page): copied to tests/site/vendor/
# (git-ignored), not into the site, since readers never need it.
# They come from their npm packages (versions pinned in scripts/vendor/package.json and
# package-lock.json) and are copied into book/_static/vendor/ (git-ignored), which Sphinx
# copies to _build/html/_static/vendor/. _config.yml points mathjax_path and myst-nb's
# nb_ipywidgets_js there. Nothing here is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
NPM_DIR=scripts/vendor
DEST=book/_static/vendor

command -v npm >/dev/null || { echo "vendor_assets: npm (node >= 18) is needed to vendor MathJax and the widget manager" >&2; exit 1; }

if [ -f "$NPM_DIR/package-lock.json" ]; then
    npm ci --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error
else
    npm install --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error
fi
NM="$NPM_DIR/node_modules"

rm -rf "$DEST"
mkdir -p "$DEST/mathjax" "$DEST/html-manager"
# MathJax: the whole es5 tree, since tex-chtml.js loads fonts, extensions and the
# accessibility menu components relative to its own location on demand.
cp -r "$NM/mathjax/es5/." "$DEST/mathjax/"
# The widget manager: embed-amd.js and the font files its CSS references (no source maps,
# no standalone embed.js).
find "$NM/@jupyter-widgets/html-manager/dist" -maxdepth 1 -type f \
    ! -name '*.map' ! -name 'embed.js' ! -name 'embed.js.LICENSE.txt' ! -name 'libembed-amd.js' \
    -exec cp {} "$DEST/html-manager/" \;
cp "$NM/requirejs/require.js" "$DEST/require.js"
cp "$NM/mathjax/LICENSE" "$DEST/mathjax/LICENSE"
cp "$NM/@jupyter-widgets/html-manager/package.json" "$DEST/html-manager/package.json"
# Vega, Vega-Lite and vega-embed (UMD builds): the explorers' live charts on the site
# (specmath.widgets, loaded by _static/specmath-explorers.js only on pages with one).
mkdir -p "$DEST/vega"
cp "$NM/vega/build/vega.min.js" "$NM/vega-lite/build/vega-lite.min.js" \
   "$NM/vega-embed/build/vega-embed.min.js" "$DEST/vega/"
cp "$NM/vega/LICENSE" "$DEST/vega/LICENSE-vega"
cp "$NM/vega-lite/LICENSE" "$DEST/vega/LICENSE-vega-lite"
cp "$NM/vega-embed/LICENSE" "$DEST/vega/LICENSE-vega-embed"
TEST_DEST=tests/site/vendor
rm -rf "$TEST_DEST"
mkdir -p "$TEST_DEST"
cp "$NM/axe-core/axe.min.js" "$NM/axe-core/LICENSE" "$NM/axe-core/package.json" "$TEST_DEST/"
date -u +%FT%TZ > "$DEST/.stamp"
echo "vendor_assets: $(du -sh "$DEST" | cut -f1) in $DEST (mathjax $(node -p "require('./$NM/mathjax/package.json').version"), html-manager $(node -p "require('./$NM/@jupyter-widgets/html-manager/package.json').version"), requirejs $(node -p "require('./$NM/requirejs/package.json').version")); axe-core $(node -p "require('./$NM/axe-core/package.json').version") in $TEST_DEST"
