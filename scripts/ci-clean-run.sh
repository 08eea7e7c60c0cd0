#!/usr/bin/env bash
# Times one clean CI run: `.ci/run` on a machine where nothing is cached, step by step, in wall
# and CPU seconds (docs/BENCHMARKS.md, "Clean CI run").
#
#   scripts/ci-clean-run.sh [COMMIT] [--keep-registry] [--keep]
#
# COMMIT (default HEAD) of this repository is cloned afresh into a temporary directory, and .ci/run
# runs there with:
#   - an empty CARGO_TARGET_DIR;
#   - an empty AGENT_REALMODEL_CACHE (llama.cpp, the Python venvs and the model are built anew);
#   - an empty AGENT_MCP_PEERS (the npm and pip peers are installed anew);
#   - empty npm and pip download caches;
#   - a fresh CARGO_HOME, so no cargo-deny in its bin/ and no crate downloads cached, and a PATH
#     that holds the toolchain's rustup proxies but not ~/.cargo/bin (where cargo-deny may be).
#     --keep-registry shares ~/.cargo/registry (the crate downloads only) when the network is slow.
# The toolchain itself (rustup, the pinned Rust) and the system packages are the machine's, as on
# a CI image. The log goes to ci-clean-run-<commit>.log in the current directory; the temporary
# directory (several GB) is deleted at the end unless --keep is given.
#
# Judge the figures with the machine's load, printed before and after: on a shared machine the CPU
# seconds halved (two cores) are the floor of the wall time an idle machine would take.
set -euo pipefail

commit=HEAD
keep_registry=false
keep=false
for arg in "$@"; do
  case "$arg" in
    --keep-registry) keep_registry=true ;;
    --keep) keep=true ;;
    -*) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    *) commit="$arg" ;;
  esac
done

repo="$(cd "$(dirname "$0")/.." && pwd)"
sha="$(git -C "$repo" rev-parse --verify "$commit^{commit}")"
log="$PWD/ci-clean-run-${sha:0:10}.log"
free_gb="$(df -BG --output=avail "${TMPDIR:-/tmp}" | tail -1 | tr -dc 0-9)"
if [ "$free_gb" -lt 12 ]; then
  echo "ci-clean-run: only ${free_gb} GB free under ${TMPDIR:-/tmp}; a clean run needs about 12" >&2
  exit 1
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/ci-clean-run.XXXXXX")"
# mktemp makes the directory 0700; tests that run a built binary as `nobody` need to reach it.
chmod 755 "$tmp"
cleanup() { if [ "$keep" = false ]; then rm -rf "$tmp"; else echo "ci-clean-run: kept $tmp"; fi; }
trap cleanup EXIT

git clone --quiet --no-local --no-checkout "$repo" "$tmp/src"
git -C "$tmp/src" checkout --quiet --detach "$sha"

# The toolchain without ~/.cargo/bin: only rustup's proxies are linked, so a cargo-deny (or any
# other cargo-* tool) installed there is not found.
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
mkdir -p "$tmp/toolchain" "$tmp/cargo-home/bin"
for tool in cargo rustc rustdoc rustfmt cargo-fmt cargo-clippy clippy-driver rustup; do
  if [ -e "$cargo_bin/$tool" ]; then ln -s "$cargo_bin/$tool" "$tmp/toolchain/$tool"; fi
done
path="$(echo "$PATH" | tr ':' '\n' | grep -v -x -F "$cargo_bin" | paste -sd:)"
if [ "$keep_registry" = true ]; then
  ln -s "${CARGO_HOME:-$HOME/.cargo}/registry" "$tmp/cargo-home/registry"
fi

run_env=(
  env
  PATH="$tmp/cargo-home/bin:$tmp/toolchain:$path"
  RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
  CARGO_HOME="$tmp/cargo-home"
  CARGO_TARGET_DIR="$tmp/target"
  CARGO_INCREMENTAL=0
  AGENT_REALMODEL_CACHE="$tmp/realmodel"
  AGENT_MCP_PEERS="$tmp/mcp-peers"
  npm_config_cache="$tmp/npm-cache"
  PIP_CACHE_DIR="$tmp/pip-cache"
  CI=true
)
if "${run_env[@]}" bash -c 'command -v cargo-deny' >/dev/null; then
  echo "ci-clean-run: cargo-deny is still on the PATH; refusing to time a run that is not clean" >&2
  exit 1
fi

{
  echo "ci-clean-run: commit $sha, $(nproc) cores, $(date -u +%FT%TZ)"
  echo "ci-clean-run: load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$log"
started="$(date +%s)"
status=0
# bash's own `time`: the user and system seconds of .ci/run and everything it ran (background
# jobs included), without needing /usr/bin/time on the machine.
(cd "$tmp/src" && TIMEFORMAT='ci-clean-run: .ci/run %0R s wall, %0U s user, %0S s sys' \
  && time "${run_env[@]}" bash .ci/run) 2>&1 | tee -a "$log" || status=$?
{
  echo "ci-clean-run: load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "ci-clean-run: $(( $(date +%s) - started )) s in all; exit $status"
  echo "ci-clean-run: the steps (wall s, CPU s):"
  grep -E '^== xtask ci: [a-z-]+ +[0-9]+ +[0-9]+$|^== xtask ci: step ' "$log" || true
  du -sh "$tmp/target" "$tmp/realmodel" 2>/dev/null | sed 's/^/ci-clean-run: disk /'
} | tee -a "$log"
echo "ci-clean-run: log in $log"
exit "$status"
