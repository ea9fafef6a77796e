// Shared test helpers: a fake OpenClaw plugin API, a spawn that runs the fake server, temp workspaces.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const FAKE_SERVE = path.join(path.dirname(fileURLToPath(import.meta.url)), "fake-serve.mjs");

/** A spawn that runs the fake server with the plugin's arguments; `env` adds failure knobs. */
export function fakeSpawn(env = {}) {
  const calls = [];
  const fn = (command, args, opts) => {
    calls.push({ command, args });
    return spawn(process.execPath, [FAKE_SERVE, ...args], { ...opts, env: { ...process.env, ...env } });
  };
  fn.calls = calls;
  return fn;
}

const tempDirs = [];
process.on("exit", () => {
  for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true });
});

/** A temp directory, removed when the test process exits. */
export function tempDir(prefix = "clawhdf5-plugin-") {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(d);
  return d;
}

/** Writes a small OpenClaw workspace: MEMORY.md and one daily note. */
export function writeWorkspace(dir) {
  fs.mkdirSync(path.join(dir, "memory"), { recursive: true });
  fs.writeFileSync(
    path.join(dir, "MEMORY.md"),
    "# Memory\n\nThe user's name is Alice Moreau.\nShe works as a marine biologist in Lisbon.\n\nFavourite editor: Helix.\n",
  );
  fs.writeFileSync(
    path.join(dir, "memory", "2026-05-01.md"),
    "# 2026-05-01\n\nDiscussed the octopus tagging project.\nDeadline for the grant report is June 12.\n",
  );
  return dir;
}

/** A fake `api` object recording what the plugin registers. */
export function fakeApi({ pluginConfig = {}, config = {}, stateDir } = {}) {
  const rec = { capabilities: [], tools: [], hooks: new Map(), logs: [] };
  const log = (level) => (msg) => rec.logs.push({ level, msg });
  const api = {
    id: "clawhdf5",
    name: "clawhdf5 memory",
    source: "test",
    registrationMode: "full",
    config,
    pluginConfig,
    runtime: { state: { resolveStateDir: () => stateDir ?? path.join(os.tmpdir(), "oc-state") } },
    logger: { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") },
    registerMemoryCapability: (cap) => rec.capabilities.push(cap),
    registerTool: (tool, opts) => rec.tools.push({ tool, opts }),
    on: (name, handler, opts) => {
      if (!rec.hooks.has(name)) rec.hooks.set(name, []);
      rec.hooks.get(name).push({ handler, opts });
    },
  };
  return { api, rec };
}

/** Resolves the registered tool `name` for a tool context. */
export function toolFrom(rec, name, ctx = {}) {
  const entry = rec.tools.find((t) => t.opts?.name === name);
  if (!entry) throw new Error(`tool ${name} not registered`);
  return typeof entry.tool === "function" ? entry.tool(ctx) : entry.tool;
}

/** Reads the JSON lines the fake server logged. */
export function readLog(file) {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}
