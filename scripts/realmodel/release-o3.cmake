# Included by cmake right after ggml's `project()` (CMAKE_PROJECT_ggml_INCLUDE, set by realmodel.sh):
# the rest of llama.cpp builds at -O1 to save compile time, while ggml, where inference spends its
# time, keeps the full release optimisation. The variables are directory-scoped, so this reaches
# ggml's targets only.
set(CMAKE_C_FLAGS_RELEASE "-O3 -DNDEBUG")
set(CMAKE_CXX_FLAGS_RELEASE "-O3 -DNDEBUG")
