# Sourced by the GPU scripts: installs the project without dependencies (the machine has torch and
# triton), with wheels for what it lacks from .whl/ (lark; liger-kernel to compare with), and sets
# the environment for compiling (not interpreting) on the GPU. Expects to run in the repository root.
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/tilec-site .whl/*.whl
  export PYTHONPATH=/tmp/tilec-site:${PYTHONPATH:-}
fi
python3 -m pip install -q --no-deps --no-build-isolation -e . || exit 1
export TILEC_CACHE_DIR=${TILEC_CACHE_DIR:-/tmp/tilec-cache} PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
