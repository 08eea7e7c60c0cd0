#!/bin/sh
# Runs an ACP agent for a client that spawns it (acpx) and copies every line the agent writes to
# FRAMES, so the test can validate the agent's frames apart from the client's.
#   sh tee.sh FRAMES AGENT [ARGS...]
frames="$1"
shift
"$@" | tee "$frames"
