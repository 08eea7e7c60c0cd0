// Runs the pinned MCP conformance CLI (@modelcontextprotocol/conformance, package-lock.json) on
// the Node this machine has.
//
//   node scripts/mcp/conformance.mjs NODE_MODULES server --url URL ...
//
// The CLI imports `globSync` from `fs`, which Node has only since 22, for its tier report (which
// the tests do not use); on an older Node that one import fails and with it the whole CLI. So on
// Node < 22 `fs` is given to the CLI with a small `globSync` added (a walk matching `**/NAME`),
// and everything else is the CLI as published.
import { register } from "node:module";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [modules, ...args] = process.argv.slice(2);
const major = Number(process.versions.node.split(".")[0]);
if (major < 22) {
    const shim = `
import fs from "node:fs";
import path from "node:path";
export * from "node:fs";
export default fs;
export function globSync(pattern, options = {}) {
    const base = String(pattern).split("/").pop();
    const root = options.cwd ?? process.cwd();
    const found = [];
    const walk = (dir) => {
        for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
            const full = path.join(dir, entry.name);
            if (entry.isDirectory()) walk(full);
            else if (entry.name === base) found.push(path.relative(root, full));
        }
    };
    walk(root);
    return found;
}`;
    const hooks = `
const shim = ${JSON.stringify("data:text/javascript," + encodeURIComponent(shim))};
export async function resolve(specifier, context, next) {
    if ((specifier === "fs" || specifier === "node:fs") && context.parentURL?.includes("/conformance/dist/")) {
        return { url: shim, shortCircuit: true };
    }
    return next(specifier, context);
}`;
    register("data:text/javascript," + encodeURIComponent(hooks));
}
process.argv = [process.argv[0], "conformance", ...args];
await import(pathToFileURL(path.join(modules, "@modelcontextprotocol/conformance/dist/index.js")).href);
