// A test client of `agent acp` built on the official ACP TypeScript SDK (@agentclientprotocol/sdk,
// pinned in scripts/peers/acp/). Usage:
//   node client.mjs SDK_DIR AGENT SCENARIO WORKSPACE FRAMES_FILE [AGENT_ARGS...]
// It records every line the agent writes to FRAMES_FILE (the Rust test validates them against the
// protocol's JSON Schema), plays SCENARIO and prints one JSON summary line on stdout.
import { spawn } from "node:child_process";
import fs from "node:fs";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [sdkDir, agentBin, scenario, workspace, framesPath, ...agentArgs] = process.argv.slice(2);
const acp = await import(pathToFileURL(`${sdkDir}/dist/v1/stable/acp.js`).href);

const child = spawn(agentBin, ["acp", ...agentArgs], {
  cwd: workspace,
  env: process.env,
  stdio: ["pipe", "pipe", "inherit"],
});
const frames = fs.createWriteStream(framesPath);
child.stdout.on("data", (chunk) => frames.write(chunk));
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const log = { updates: [], permissions: [], writes: [], reads: [] };
const waiters = [];
const changed = () => waiters.splice(0).forEach((wake) => wake());
const until = async (what, done) => {
  const deadline = Date.now() + 60_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((wake) => {
      waiters.push(wake);
      setTimeout(wake, 50);
    });
  }
};
// The permission answer each scenario gives; `null` leaves the request pending until a cancel.
const answers = {
  "edit-allow": "allow-once",
  "edit-always": "allow-always",
  "edit-reject": "reject",
  "edit-fs": "allow-once",
};
// Live processes (not zombies) whose command line holds `marker`, from /proc.
const running = (pid) => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "latin1");
    const state = stat.slice(stat.lastIndexOf(") ") + 2).split(" ")[0];
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
};
const processesWith = (marker) =>
  fs.readdirSync("/proc").filter((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, "latin1").includes(marker) && running(pid);
    } catch {
      return false;
    }
  });
// Live processes whose first argument is `marker`: the command `exec -a` named.
const namedBy = (marker) =>
  fs.readdirSync("/proc").filter((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, "latin1").startsWith(`${marker}\0`) && running(pid);
    } catch {
      return false;
    }
  });
// The command `cancel-bash` runs is named with this marker (`exec -a`).
const marker = process.env.ACP_TEST_MARKER;
// In `edit-fs` the editor holds an unsaved buffer of every file, which differs from the disk.
const buffer = "hello from the buffer\n";
let cancelled = false;

const app = acp
  .client({ name: "agent-test-client" })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
    log.permissions.push(params);
    changed();
    const answer = answers[scenario];
    if (answer) return { outcome: { outcome: "selected", optionId: answer } };
    // As the protocol asks of a client: a cancelled prompt's pending requests are answered
    // `cancelled`.
    await until("the cancel", () => cancelled);
    return { outcome: { outcome: "cancelled" } };
  })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    log.updates.push(params.update);
    changed();
  })
  // An editor's file system: writes are recorded (never written to the disk), reads give the buffer.
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    log.writes.push(params);
    return {};
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    log.reads.push(params);
    return { content: buffer };
  });

const fsCapability = scenario === "edit-fs";
const summary = await app.connectWith(stream, async (agent) => {
  const init = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: fsCapability, writeTextFile: fsCapability }, terminal: false },
  });
  const out = { init };
  if (scenario === "load" || scenario === "list") {
    out.list = await agent.request(acp.methods.agent.session.list, { cwd: workspace });
    if (scenario === "load") {
      const id = process.env.ACP_TEST_SESSION;
      out.loaded = await agent.request(acp.methods.agent.session.load, {
        sessionId: id,
        cwd: workspace,
        mcpServers: [],
      });
    }
    return out;
  }
  if (scenario === "two-sessions") {
    // Two sessions open at once, each prompted in turn (so the scripted model's turns go in order).
    const open = () => agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    out.sessions = [await open(), await open()];
    out.prompts = [];
    for (const { sessionId } of out.sessions) {
      const prompt = [{ type: "text", text: "fetch" }];
      out.prompts.push(await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt }));
    }
    return out;
  }
  const session = await agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
  out.session = session;
  const sessionId = session.sessionId;
  if (scenario === "set-mode") {
    out.setMode = await agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "plan" });
  }
  const prompt = agent.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "do the task" }],
  });
  if (scenario === "cancel-bash" || scenario === "cancel-permission") {
    if (scenario === "cancel-bash") {
      // Only once the `sleep` itself runs under the marker's name: before its `exec`, the marker
      // is in the shell's command line, and a process in mid-`exec` can read as gone. The list
      // kept is the one that ended the wait, so the control cannot see a later, emptier one.
      await until("the command to start", () => (out.before = namedBy(marker)).length > 0);
    } else {
      await until("the permission request", () => log.permissions.length > 0);
    }
    await agent.notify(acp.methods.agent.session.cancel, { sessionId });
    cancelled = true;
    changed();
  }
  try {
    out.prompt = await prompt;
  } catch (error) {
    out.promptError = { code: error.code, message: error.message, data: error.data };
  }
  if (scenario === "cancel-bash") {
    // The agent still runs (its stdin is open, the session too): the cancel itself must have
    // ended the command, not the agent's exit. (The wait covers the kill's delivery.)
    await until("the cancelled command to end", () => processesWith(marker).length === 0);
    out.after = { pids: processesWith(marker), agentRunning: running(child.pid) };
  }
  return out;
});
summary.updates = log.updates;
summary.permissions = log.permissions;
summary.writes = log.writes;
summary.reads = log.reads;
child.stdin.end();
await new Promise((done) => child.on("exit", done));
frames.end();
await new Promise((done) => frames.on("finish", done));
process.stdout.write(`${JSON.stringify(summary)}\n`);
