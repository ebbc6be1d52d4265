#!/usr/bin/env bash
# make gpu-rehearsal: the GPU machine's first call, rehearsed on CPU (issue 18).
#
# 1. a fresh virtual environment with only numpy, torch (the CPU wheel) and
#    transformers 5.17, as on the GPU machine (none of the course's other dependencies);
# 2. a copy of the working tree made the way the GPU machine receives it: tracked files
#    plus untracked files that git does not ignore, at most 64 MiB;
# 3. the exact GPU command, with --smoke, run in that copy with that environment;
# 4. a check of the JSON it wrote: every section ran, no errors, exactness on every path.
# Exits non-zero at the first thing that fails. Timings of each step are printed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${REHEARSAL_PYTHON:-python3}          # the GPU machine has 3.12; see README
WORK=$(mktemp -d /tmp/specmath-gpu-rehearsal.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
VENV=$WORK/venv
OUT=$WORK/out
TREE=$WORK/tree
mkdir -p "$OUT" "$TREE"
SECONDS=0
step() { printf '[gpu-rehearsal %4ds] %s\n' "$SECONDS" "$*"; }

step "fresh venv ($($PY --version 2>&1)) with numpy, torch==2.13.0 (CPU), transformers==5.17.*"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check numpy torch==2.13.0 \
    "transformers==5.17.*" 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true
"$VENV/bin/python" - <<'EOF'
import importlib.util, torch, transformers
extra = [m for m in ("scipy", "matplotlib", "ipywidgets", "pytest") if importlib.util.find_spec(m)]
assert not extra, f"the rehearsal venv must not have {extra}"
assert transformers.__version__.startswith("5.17."), transformers.__version__
assert not torch.cuda.is_available()
print(f"  torch {torch.__version__}, transformers {transformers.__version__}, nothing else")
EOF

step "copy of the tree as the GPU machine receives it (git ls-files -co --exclude-standard)"
(cd "$ROOT" && git ls-files -z -co --exclude-standard) | "$PY" -c '
import os, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
n = 0
for rel in sys.stdin.buffer.read().decode().split("\0"):
    if rel and os.path.isfile(os.path.join(src, rel)):  # a deleted tracked file is skipped
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        shutil.copy2(os.path.join(src, rel), os.path.join(dst, rel))
        n += 1
print(f"  {n} files")' "$ROOT" "$TREE"
size=$(du -sb "$TREE" | cut -f1)
echo "  $((size / 1024)) KiB (the GPU machine takes at most 64 MiB)"
[ "$size" -le $((64 * 1024 * 1024)) ] || { echo "tree larger than 64 MiB"; exit 1; }

step "the exact GPU command, with --smoke, in the copy"
(cd "$TREE" && export PATH="$VENV/bin:$PATH" OUT="$OUT" &&
 PYTHONPATH=. python3 benchmarks/gpu_run.py --smoke --out $OUT/gpu_run.json)

step "check of $OUT/gpu_run.json"
"$VENV/bin/python" - "$OUT/gpu_run.json" <<'EOF'
import json, sys
rec = json.load(open(sys.argv[1]))
assert not rec.get("stopped"), rec.get("stopped")
for sec in ("exactness", "cost", "replay", "overhead"):
    r = rec[sec]
    assert "error" not in r and not r.get("errors") and not r.get("skipped"), (sec, r)
for name, r in rec["exactness"]["paths"].items():
    assert r.get("greedy_identity") is True and r.get("sampling_passes") in (True, None), name
print(f"  every section ran; exactness on {len(rec['exactness']['paths'])} paths; "
      f"run {rec['elapsed_s']:.0f} s")
EOF
step "rehearsal passed"
