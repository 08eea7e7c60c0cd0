#!/usr/bin/env bash
# Installs the real MCP peers the agent-mcp tests talk to, pinned by the lockfiles beside this
# script: the Node reference server `@modelcontextprotocol/server-everything` (package-lock.json)
# and the Python MCP SDK (requirements.txt), into one cache directory.
#
#   scripts/mcp/setup.sh            # into $AGENT_MCP_PEERS, else ~/.cache/agent/mcp-peers
#
# The tests find the peers through AGENT_MCP_PEERS (or that default path). Running it again is
# cheap: npm ci and pip skip what is already installed at the pinned versions.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${AGENT_MCP_PEERS:-${HOME}/.cache/agent/mcp-peers}"
mkdir -p "$dest/node"

cp "$here/package.json" "$here/package-lock.json" "$dest/node/"
# --ignore-scripts: nothing from the registry runs at install time.
(cd "$dest/node" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)

if [ ! -x "$dest/venv/bin/python" ]; then
    python3 -m venv "$dest/venv"
fi
"$dest/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"

# Every other area's peers (ACP clients, language servers, OTLP receivers, …) sit in
# scripts/peers/<area>/ with their own lockfiles, so two areas never share one lock: each gets
# $dest/<area>/node (from package.json + package-lock.json) and $dest/<area>/venv (from
# requirements.txt), installed the same way as the MCP peers above.
for area_dir in "$here"/../peers/*/; do
    [ -d "$area_dir" ] || continue
    area="$(basename "$area_dir")"
    if [ -f "$area_dir/package.json" ]; then
        mkdir -p "$dest/$area/node"
        cp "$area_dir/package.json" "$area_dir/package-lock.json" "$dest/$area/node/"
        (cd "$dest/$area/node" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    fi
    if [ -f "$area_dir/requirements.txt" ]; then
        [ -x "$dest/$area/venv/bin/python" ] || python3 -m venv "$dest/$area/venv"
        "$dest/$area/venv/bin/pip" install --quiet --disable-pip-version-check -r "$area_dir/requirements.txt"
    fi
done

echo "MCP peers ready in $dest (export AGENT_MCP_PEERS=$dest if that is not the default)"
