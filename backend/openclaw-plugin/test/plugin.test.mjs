import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import plugin, { registerClawhdf5 } from "../index.js";
import { closeAllClients, serveCommand } from "../lib/runtime.js";
import { resolvePluginConfig } from "../lib/config.js";
import { MEMORY_GET_SCHEMA, MEMORY_SEARCH_SCHEMA } from "../lib/tools.js";
import { fakeApi, fakeSpawn, readLog, tempDir, toolFrom, writeWorkspace } from "./helpers.mjs";

after(async () => {
  await closeAllClients();
});

/** Registers the plugin against a fake API with a fresh store and workspace. */
function setup({ pluginConfig = {}, env = {} } = {}) {
  const root = tempDir();
  const workspace = writeWorkspace(path.join(root, "ws"));
  const log = path.join(root, "serve.log");
  const spawn = fakeSpawn({ FAKE_SERVE_LOG: log, ...env });
  const { api, rec } = fakeApi({
    pluginConfig: { storeDir: path.join(root, "store"), workspace, binaryPath: "/opt/clawhdf5", ...pluginConfig },
    stateDir: path.join(root, "state"),
  });
  const { runtime, settings } = registerClawhdf5(api, { spawn });
  return { root, workspace, log, spawn, api, rec, runtime, settings, cap: rec.capabilities[0] };
}

async function call(rec, name, args, ctx = { agentId: "main" }) {
  const res = await toolFrom(rec, name, ctx).execute("call-1", args);
  assert.equal(res.content.length, 1);
  assert.equal(res.content[0].type, "text");
  assert.deepEqual(JSON.parse(res.content[0].text), res.details, "text is the pretty-printed payload");
  return res.details;
}

test("the entry is a memory-kind plugin and registers the runtime and four tools", () => {
  assert.equal(plugin.id, "clawhdf5");
  assert.equal(plugin.kind, "memory");
  assert.equal(typeof plugin.register, "function");
  const { rec, cap } = setup();
  assert.equal(rec.capabilities.length, 1);
  for (const fn of ["getMemorySearchManager", "resolveMemoryBackendConfig", "closeMemorySearchManager", "closeAllMemorySearchManagers"]) {
    assert.equal(typeof cap.runtime[fn], "function", fn);
  }
  assert.deepEqual(cap.runtime.resolveMemoryBackendConfig({ cfg: {}, agentId: "main" }), { backend: "builtin" });
  assert.deepEqual(
    rec.tools.map((t) => t.opts.name),
    ["memory_search", "memory_get", "memory_store", "memory_forget"],
  );
  const manifest = JSON.parse(fs.readFileSync(new URL("../openclaw.plugin.json", import.meta.url), "utf8"));
  assert.equal(manifest.id, "clawhdf5");
  assert.equal(manifest.kind, "memory");
  assert.equal(manifest.configSchema.additionalProperties, false);
  assert.deepEqual(manifest.contracts.tools, rec.tools.map((t) => t.opts.name));
  const pkg = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  assert.deepEqual(pkg.openclaw.extensions, ["./index.js"]);
  assert.equal(pkg.type, "module");
});

test("memory_search and memory_get keep memory-core's argument schemas (memory_search adds optional tags)", () => {
  assert.deepEqual(MEMORY_SEARCH_SCHEMA.required, ["query"]);
  assert.equal(MEMORY_SEARCH_SCHEMA.additionalProperties, false);
  // Every memory-core call stays valid; `tags` is the one optional addition.
  assert.deepEqual(Object.keys(MEMORY_SEARCH_SCHEMA.properties), ["query", "maxResults", "minScore", "corpus", "tags"]);
  assert.equal(MEMORY_SEARCH_SCHEMA.properties.tags.type, "array");
  assert.deepEqual(MEMORY_SEARCH_SCHEMA.properties.corpus.enum, ["memory", "wiki", "all", "sessions"]);
  assert.deepEqual(MEMORY_GET_SCHEMA.required, ["path"]);
  assert.deepEqual(Object.keys(MEMORY_GET_SCHEMA.properties), ["path", "from", "lines", "corpus"]);
  assert.equal(MEMORY_GET_SCHEMA.properties.from.minimum, 1);
});

test("the plugin config is validated", () => {
  const { api } = fakeApi({ pluginConfig: { storeDir: "/tmp/x", bogus: 1 } });
  assert.throws(() => registerClawhdf5(api, {}), /unknown setting "bogus"/);
  const { api: api2 } = fakeApi({ pluginConfig: { timeoutMs: 60000 } });
  assert.throws(() => registerClawhdf5(api2, {}), /timeoutMs must be an integer in \[100, 14000\]/);
});

test("manager: sync a workspace, search it with citations, read files, status", async () => {
  const { cap, workspace, log, spawn, settings } = setup();
  const { manager, error } = await cap.runtime.getMemorySearchManager({ cfg: {}, agentId: "main", purpose: "cli" });
  assert.equal(error, undefined);
  assert.ok(manager);
  assert.equal(spawn.calls[0].command, "/opt/clawhdf5");
  assert.deepEqual(spawn.calls[0].args.slice(0, 3), ["serve", "--dir", settings.storeDir]);

  await manager.sync({ reason: "test" });
  const hits = await manager.search("grant report deadline", { maxResults: 3 });
  assert.ok(hits.length >= 1);
  const top = hits[0];
  assert.equal(top.path, "memory/2026-05-01.md");
  assert.equal(top.startLine, 3);
  assert.equal(top.endLine, 4);
  assert.equal(top.source, "memory");
  assert.equal(top.citation, "memory/2026-05-01.md#L3-L4");
  assert.match(top.snippet, /June 12/);
  assert.equal(typeof top.score, "number");
  assert.equal(typeof top.textScore, "number");

  const read = await manager.readFile({ relPath: "MEMORY.md", from: 3, lines: 2 });
  assert.equal(read.status, "ok");
  assert.equal(read.path, "MEMORY.md");
  assert.equal(read.text, "The user's name is Alice Moreau.\nShe works as a marine biologist in Lisbon.");
  assert.equal(read.truncated, true);
  assert.equal(read.nextFrom, 5);
  const missing = await manager.readFile({ relPath: "memory/2030-01-01.md" });
  assert.deepEqual(missing, { status: "not_found", text: "", path: "memory/2030-01-01.md" });

  const st = manager.status();
  assert.equal(st.backend, "builtin");
  assert.equal(st.provider, "clawhdf5");
  assert.equal(st.workspaceDir, workspace);
  assert.equal(st.files, 2);
  assert.ok(st.chunks >= 4);
  assert.equal(st.dbPath, path.join(settings.storeDir, "main.h5"));
  assert.equal(st.vector.enabled, true);
  assert.equal(st.custom.searchMode, "hybrid");
  assert.equal(st.custom.clawhdf5.logWrites, 3);
  assert.equal(st.custom.clawhdf5.logEntries, 5);
  assert.equal(st.custom.clawhdf5.unindexedRows, 0);
  const probe = await manager.probeEmbeddingAvailability();
  assert.equal(probe.ok, true);
  assert.equal(probe.checked, true);
  assert.equal(await manager.probeVectorAvailability(), true);

  // sync and search went to the server with the agent's store name and the workspace
  const reqs = readLog(log).filter((l) => l.method);
  const sync = reqs.find((r) => r.method === "sync");
  assert.equal(sync.params.agent, "main");
  assert.equal(sync.params.workspace, workspace);
  assert.equal(reqs.find((r) => r.method === "search").params.mode, "hybrid");
});

test("manager: readFile refuses paths outside the workspace, symlink escapes and non-Markdown files", async () => {
  const { cap, workspace, root } = setup();
  const { manager } = await cap.runtime.getMemorySearchManager({ cfg: {}, agentId: "main" });
  fs.writeFileSync(path.join(root, "secret.md"), "top secret\n");
  fs.symlinkSync(path.join(root, "secret.md"), path.join(workspace, "memory", "link.md"));
  fs.writeFileSync(path.join(workspace, ".env"), "TOKEN=x\n");
  for (const bad of ["../secret.md", path.join(root, "secret.md"), "/etc/passwd", "memory/../../secret.md", "memory/link.md"]) {
    await assert.rejects(manager.readFile({ relPath: bad }), (err) => err.code === "PATH_OUTSIDE_WORKSPACE", bad);
  }
  await assert.rejects(manager.readFile({ relPath: ".env" }), (err) => err.code === "NOT_A_MEMORY_FILE");
  await assert.rejects(manager.readFile({ relPath: "" }), (err) => err.code === "INVALID_PATH");
});

test("tools: store, search (memory-core payload), get a synthetic path, forget", async () => {
  const { rec } = setup();
  const stored = await call(rec, "memory_store", { text: "The user prefers green tea over coffee.", tags: ["pref"] });
  assert.equal(stored.stored, true);
  assert.equal(stored.path, `clawhdf5/${stored.id}`);
  const again = await call(rec, "memory_store", { text: "The user prefers green tea over coffee." });
  assert.equal(again.deduplicated, true);

  const found = await call(rec, "memory_search", { query: "green tea", maxResults: 5 });
  assert.equal(found.provider, "clawhdf5");
  assert.equal(found.citations, "auto");
  assert.equal(found.mode, "hybrid");
  const hit = found.results.find((r) => r.path === stored.path);
  assert.ok(hit, "stored memory is found");
  assert.equal(hit.citation, `${stored.path}#L1`);
  assert.equal(hit.corpus, "memory");

  const tagged = await call(rec, "memory_search", { query: "green tea", tags: ["pref"] });
  assert.deepEqual(tagged.results.map((r) => r.path), [stored.path]);
  const otherTag = await call(rec, "memory_search", { query: "green tea", tags: ["work"] });
  assert.deepEqual(otherTag.results, []);
  const badTags = await call(rec, "memory_search", { query: "green tea", tags: "pref" });
  assert.equal(badTags.disabled, true);
  assert.match(badTags.error, /tags must be an array of strings/);

  const got = await call(rec, "memory_get", { path: stored.path });
  assert.equal(got.status, "ok");
  assert.equal(got.text, "The user prefers green tea over coffee.");

  const forgot = await call(rec, "memory_forget", { memoryId: stored.id });
  assert.deepEqual(forgot.forgotten, [stored.id]);
  const gone = await call(rec, "memory_get", { path: stored.path });
  assert.equal(gone.status, "not_found");
  const after = await call(rec, "memory_search", { query: "green tea" });
  assert.equal(after.results.find((r) => r.path === stored.path), undefined);
});

test("tools: forget by query deletes only a clear match; workspace excerpts are refused", async () => {
  const { rec, cap } = setup();
  await call(rec, "memory_store", { text: "Parking spot is B12" });
  await call(rec, "memory_store", { text: "Parking garage closes at 10pm" });
  const ambiguous = await call(rec, "memory_forget", { query: "parking" });
  assert.deepEqual(ambiguous.forgotten, []);
  assert.equal(ambiguous.candidates.length, 2);
  const clear = await call(rec, "memory_forget", { query: "parking spot B12" });
  assert.equal(clear.forgotten.length, 1);

  const { manager } = await cap.runtime.getMemorySearchManager({ cfg: {}, agentId: "main" });
  await manager.sync();
  const [ws] = await manager.search("octopus tagging");
  const refused = await call(rec, "memory_forget", { memoryId: ws.id });
  assert.deepEqual(refused.forgotten, []);
  assert.match(refused.error, /excerpt of memory\/2026-05-01\.md; edit that file/);
  const byPath = await call(rec, "memory_forget", { path: "MEMORY.md" });
  assert.match(byPath.error, /workspace file/);
});

test("tools: memory_get refuses paths outside the workspace with status error", async () => {
  const { rec } = setup();
  const res = await call(rec, "memory_get", { path: "../../etc/passwd" });
  assert.equal(res.status, "error");
  assert.equal(res.code, "PATH_OUTSIDE_WORKSPACE");
  assert.equal(res.text, "");
  const ok = await call(rec, "memory_get", { path: "memory/2026-05-01.md", from: 3, lines: 1 });
  assert.equal(ok.status, "ok");
  assert.equal(ok.text, "Discussed the octopus tagging project.");
});

test("tools: invalid arguments and unsupported corpora give clear payloads", async () => {
  const { rec } = setup();
  const bad = await call(rec, "memory_search", { query: "x", bogus: true });
  assert.equal(bad.unavailable, true);
  assert.match(bad.error, /unknown argument "bogus"/);
  const sessions = await call(rec, "memory_search", { query: "x", corpus: "sessions" });
  assert.equal(sessions.disabled, true);
  assert.match(sessions.error, /not indexed by clawhdf5/);
  const badGet = await call(rec, "memory_get", { path: "MEMORY.md", from: 0 });
  assert.equal(badGet.status, "error");
  assert.match(badGet.error, /from must be an integer >= 1/);
  const badStore = await call(rec, "memory_store", { text: "   " });
  assert.equal(badStore.stored, false);
});

test("agents are isolated: each has its own store name, odd ids are hashed", async () => {
  const { rec, log } = setup();
  await call(rec, "memory_store", { text: "Only agent alpha knows the vault code 4711." }, { agentId: "alpha" });
  const fromBeta = await call(rec, "memory_search", { query: "vault code" }, { agentId: "beta" });
  assert.deepEqual(fromBeta.results, []);
  const fromAlpha = await call(rec, "memory_search", { query: "vault code" }, { agentId: "alpha" });
  assert.equal(fromAlpha.results.length, 1);
  await call(rec, "memory_store", { text: "weird agent id" }, { agentId: "ops/../x y" });
  const agents = new Set(readLog(log).filter((l) => l.method === "save").map((l) => l.params.agent));
  assert.ok(agents.has("alpha"));
  const odd = [...agents].find((a) => a.startsWith("agent-"));
  assert.match(odd, /^agent-[0-9a-f]{24}$/);
});

test("an unavailable server gives an unavailable payload, not an exception or a hang", async () => {
  const root = tempDir();
  const { api, rec } = fakeApi({ pluginConfig: { storeDir: path.join(root, "s"), workspace: root, binaryPath: "/nonexistent/clawhdf5", timeoutMs: 500 } });
  const { runtime } = registerClawhdf5(api, {});
  const t0 = Date.now();
  const res = await call(rec, "memory_search", { query: "anything" });
  assert.ok(Date.now() - t0 < 3000);
  assert.equal(res.unavailable, true);
  assert.match(res.error, /binary not found: \/nonexistent\/clawhdf5/);
  const mgr = await runtime.getMemorySearchManager({ cfg: {}, agentId: "main" });
  assert.equal(mgr.manager, null);
  assert.match(mgr.error, /clawhdf5 memory unavailable/);
});

test("a slow server: the tool answers with timedOut before OpenClaw's deadline", async () => {
  const { rec, runtime } = setup({ pluginConfig: { timeoutMs: 300, syncOnSearch: false }, env: { FAKE_SERVE_HANG: "search" } });
  // warm up: the process start is not what this test times
  await runtime.managerFor({ cfg: {}, agentId: "main" }).client.call("ping", {}, { timeoutMs: 10000 });
  const t0 = Date.now();
  const res = await call(rec, "memory_search", { query: "anything" });
  assert.ok(Date.now() - t0 < 3000);
  assert.equal(res.unavailable, true);
  assert.equal(res.timedOut, true);
});

test("closing a manager keeps the shared server; closeAll stops it", async () => {
  const { cap, spawn } = setup();
  const a = await cap.runtime.getMemorySearchManager({ cfg: {}, agentId: "main" });
  await a.manager.close();
  const b = await cap.runtime.getMemorySearchManager({ cfg: {}, agentId: "other" });
  await b.manager.search("x");
  assert.equal(spawn.calls.length, 1, "one server process for every agent");
  const child = a.manager.client.child;
  await cap.runtime.closeAllMemorySearchManagers();
  assert.equal(a.manager.client.running, false);
  assert.ok(child.exitCode === 0 || child.signalCode !== null);
});

test("search syncs the workspace first when the last sync is older than syncIntervalMs", async () => {
  const { rec, log } = setup({ pluginConfig: { syncIntervalMs: 3600000 } });
  const res = await call(rec, "memory_search", { query: "Helix editor" });
  assert.equal(res.results[0].path, "MEMORY.md");
  await call(rec, "memory_search", { query: "Lisbon" });
  assert.equal(readLog(log).filter((l) => l.method === "sync").length, 1, "second search within the interval does not sync");
});

test("a slow workspace sync does not hold a search past half its timeout", async () => {
  const { rec, cap, runtime } = setup({ pluginConfig: { timeoutMs: 1000 }, env: { FAKE_SERVE_HANG: "sync" } });
  await runtime.managerFor({ cfg: {}, agentId: "main" }).client.call("ping", {}, { timeoutMs: 10000 });
  await call(rec, "memory_store", { text: "Stored before the sync finished: the boat is called Nautilus." });
  const t0 = Date.now();
  const res = await call(rec, "memory_search", { query: "boat Nautilus" });
  // without the budget it would wait for the sync's own timeout (120 s)
  assert.ok(Date.now() - t0 < 3000, `answered in ${Date.now() - t0} ms`);
  assert.equal(res.results.length, 1);
  const { manager } = await cap.runtime.getMemorySearchManager({ cfg: {}, agentId: "main" });
  assert.ok(manager.syncInFlight, "the sync is still running in the background");
  // A later search does not wait for the running sync again (the server answers from what is indexed).
  const t1 = Date.now();
  const again = await call(rec, "memory_search", { query: "boat Nautilus" });
  assert.ok(Date.now() - t1 < 400, `the second search answered in ${Date.now() - t1} ms`);
  assert.equal(again.results.length, 1);
});

test("the server gets timeoutMs as its request deadline and syncTimeoutMs as its own sync deadline", () => {
  const settings = resolvePluginConfig({ binaryPath: "/opt/clawhdf5", storeDir: "/s", timeoutMs: 5000, syncTimeoutMs: 300000 });
  const { command, args } = serveCommand(settings);
  assert.equal(command, "/opt/clawhdf5");
  assert.deepEqual(args, ["serve", "--dir", "/s", "--deadline-ms", "5000", "--sync-deadline-ms", "300000"]);
  assert.throws(() => resolvePluginConfig({ syncTimeoutMs: 500 }), /syncTimeoutMs must be an integer in \[1000, 600000\]/);
});

test("a sync slower than timeoutMs still finishes within syncTimeoutMs", async () => {
  const { runtime, log } = setup({ pluginConfig: { timeoutMs: 300, syncTimeoutMs: 10000 }, env: { FAKE_SERVE_DELAY_SYNC_MS: "1200" } });
  const manager = runtime.managerFor({ cfg: {}, agentId: "main" });
  // warm up: the process start is not what this test times
  await manager.client.call("ping", {}, { timeoutMs: 10000 });
  const t0 = Date.now();
  const res = await manager.sync({ reason: "test", force: true });
  assert.ok(Date.now() - t0 >= 1100, "the sync really was slower than timeoutMs");
  assert.equal(res.files_indexed, 2, JSON.stringify(res));
  const argv = readLog(log).find((l) => l.argv)?.argv;
  assert.deepEqual(argv.slice(-4), ["--deadline-ms", "300", "--sync-deadline-ms", "10000"]);
});

test("a sync past syncTimeoutMs fails with a timeout that names it", async () => {
  const { runtime } = setup({ pluginConfig: { timeoutMs: 300, syncTimeoutMs: 1000 }, env: { FAKE_SERVE_HANG: "sync" } });
  const manager = runtime.managerFor({ cfg: {}, agentId: "main" });
  await manager.client.call("ping", {}, { timeoutMs: 10000 });
  const t0 = Date.now();
  await assert.rejects(manager.sync({ reason: "test" }), /clawhdf5 sync did not answer within 1000 ms/);
  assert.ok(Date.now() - t0 < 5000);
});

test("forget by query never deletes on a weak match", async () => {
  const { rec } = setup();
  await call(rec, "memory_store", { text: "Parking spot is B12" });
  const weak = await call(rec, "memory_forget", { query: "forget my dentist appointment parking" });
  assert.deepEqual(weak.forgotten, []);
  assert.equal(weak.candidates.length, 1);
});

test("an agent whose memory search is off in the OpenClaw config gets no tools and no manager", async () => {
  const { rec, cap } = setup();
  const cfg = { memory: { search: { enabled: false } }, agents: { entries: { ops: { memory: { search: { enabled: true } } } } } };
  assert.equal(toolFrom(rec, "memory_search", { agentId: "main", config: cfg }), null);
  assert.ok(toolFrom(rec, "memory_search", { agentId: "ops", config: cfg }), "an agent may turn it back on");
  const off = await cap.runtime.getMemorySearchManager({ cfg, agentId: "main" });
  assert.equal(off.manager, null);
  assert.match(off.error, /disabled for agent "main"/);
  const cfg2 = { agents: { entries: { quiet: { memory: { search: { enabled: false } } } } } };
  assert.equal(toolFrom(rec, "memory_get", { agentId: "quiet", config: cfg2 }), null);
  assert.ok(toolFrom(rec, "memory_get", { agentId: "main", config: cfg2 }));
});
