// End to end, in process: OpenClaw's own plugin loader and memory host reach the clawhdf5 plugin and its
// `clawhdf5 serve` child. Run by scripts/test-openclaw.sh.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { FACTS, OPENCLAW_MJS, STORE_DIR, WORKSPACE, alive, importOpenClaw, pidsMentioning, waitFor } from "./common.mjs";

let cfg;
let host;
let tools;

before(async () => {
  const { loadConfig } = await importOpenClaw("openclaw/plugin-sdk/config-runtime");
  host = await importOpenClaw("openclaw/plugin-sdk/memory-host-search");
  const harness = await importOpenClaw("openclaw/plugin-sdk/agent-harness");
  cfg = loadConfig();
  assert.equal(cfg.plugins?.slots?.memory, "clawhdf5", "the config under test gives clawhdf5 the memory slot");
  tools = await harness.createOpenClawCodingTools({ config: cfg, agentId: "main", sessionKey: "agent:main:main" });
});

after(async () => {
  if (cfg && host) await host.closeActiveMemorySearchManagers(cfg);
});

async function manager(agentId = "main") {
  const res = await host.getActiveMemorySearchManager({ cfg, agentId, purpose: "cli" });
  assert.equal(res.error, undefined, `getActiveMemorySearchManager error: ${res.error}`);
  assert.ok(res.manager, "OpenClaw returned the plugin's manager");
  return res.manager;
}

function tool(name) {
  const t = tools.find((x) => x.name === name);
  assert.ok(t, `OpenClaw's tool list has ${name}`);
  return t;
}

async function run(name, args) {
  const res = await tool(name).execute(`e2e-${name}-${Date.now()}`, args);
  assert.equal(res.content[0].type, "text");
  assert.deepEqual(JSON.parse(res.content[0].text), res.details);
  return res.details;
}

/** Checks a hit's citation against the lines it names, read back through readFile. */
async function checkCitation(m, hit, mustContain) {
  const lineSpec = hit.startLine === hit.endLine ? `#L${hit.startLine}` : `#L${hit.startLine}-L${hit.endLine}`;
  assert.equal(hit.citation, `${hit.path}${lineSpec}`);
  const read = await m.readFile({ relPath: hit.path, from: hit.startLine, lines: hit.endLine - hit.startLine + 1 });
  assert.equal(read.status, "ok");
  assert.match(read.text, mustContain, `lines ${lineSpec} of ${hit.path} hold the cited text`);
}

const stored = new Map();

test("OpenClaw's loader accepts the plugin: memory slot, tools and hooks, none blocked", async () => {
  const out = await new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [OPENCLAW_MJS, "plugins", "inspect", "clawhdf5", "--runtime", "--json"],
      { env: process.env, timeout: 120000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr.slice(-2000)}`)) : resolve(stdout)),
    );
  });
  const info = JSON.parse(out.slice(out.indexOf("{")));
  assert.equal(info.plugin.status, "loaded");
  assert.equal(info.plugin.activationReason, "selected memory slot");
  assert.deepEqual([...info.plugin.toolNames].sort(), ["memory_forget", "memory_get", "memory_search", "memory_store"]);
  assert.deepEqual(info.typedHooks.map((h) => h.name).sort(), ["agent_end", "before_prompt_build", "gateway_stop"]);
  const problems = (info.diagnostics ?? []).filter((d) => d.level === "error" || /blocked|invalid|failed/i.test(d.message));
  assert.deepEqual(problems, []);
});

test("the memory tools OpenClaw builds for an agent are the plugin's", () => {
  const names = tools.map((t) => t.name).filter((n) => n.startsWith("memory_"));
  assert.deepEqual(names.sort(), ["memory_forget", "memory_get", "memory_search", "memory_store"]);
});

test("memory_store saves real memories", async () => {
  for (const f of FACTS) {
    const res = await run("memory_store", { text: f.text });
    assert.equal(res.stored, true, JSON.stringify(res));
    assert.ok(Number.isInteger(res.id));
    stored.set(f.text, res);
  }
  const correction = await run("memory_store", { text: "Correction: the team offsite is in Sintra, not Cascais.", source: "user_correction" });
  assert.equal(correction.stored, true, JSON.stringify(correction));
  const again = await run("memory_store", { text: FACTS[0].text });
  assert.equal(again.id, stored.get(FACTS[0].text).id, "a duplicate is not stored twice");
});

test("manager.sync indexes the workspace and status reports it", async () => {
  const m = await manager();
  await m.sync({ reason: "e2e", force: true });
  const st = m.status();
  assert.equal(st.backend, "builtin");
  assert.equal(st.provider, "clawhdf5");
  assert.equal(st.workspaceDir, WORKSPACE);
  assert.ok(st.files >= 2, `files ${st.files}`);
  assert.ok(st.chunks >= 2, `chunks ${st.chunks}`);
  assert.ok(String(st.dbPath).startsWith(STORE_DIR), `store ${st.dbPath} under ${STORE_DIR}`);
  assert.equal(await m.probeVectorAvailability(), st.vector.available);
  const probe = await m.probeEmbeddingAvailability();
  assert.equal(typeof probe.ok, "boolean");
});

test("manager.search finds workspace notes with citations that point at the right lines", async () => {
  const m = await manager();
  const hits = await m.search("grant report deadline", { maxResults: 5 });
  const hit = hits.slice(0, 3).find((h) => h.path === "memory/2026-05-01.md");
  assert.ok(hit, `daily note in the top 3: ${JSON.stringify(hits.map((h) => h.path))}`);
  assert.equal(hit.source, "memory");
  assert.match(hit.snippet, /June 12/);
  await checkCitation(m, hit, /June 12/);

  const who = await m.search("marine biologist Lisbon", { maxResults: 5 });
  const fromMemoryMd = who.slice(0, 3).find((h) => h.path === "MEMORY.md");
  assert.ok(fromMemoryMd, `MEMORY.md in the top 3: ${JSON.stringify(who.map((h) => h.path))}`);
  await checkCitation(m, fromMemoryMd, /marine biologist/);
});

test("manager.search finds the stored memories under their clawhdf5/<id> paths", async () => {
  const m = await manager();
  for (const f of FACTS) {
    const id = stored.get(f.text).id;
    const hits = await m.search(f.query, { maxResults: 5 });
    const hit = hits.slice(0, 3).find((h) => h.path === `clawhdf5/${id}`);
    assert.ok(hit, `"${f.query}" finds memory ${id} in the top 3: ${JSON.stringify(hits.map((h) => [h.path, h.snippet.slice(0, 40)]))}`);
    assert.equal(hit.snippet, f.text);
    const read = await m.readFile({ relPath: hit.path });
    assert.equal(read.status, "ok");
    assert.equal(read.text, f.text);
  }
});

test("the memory_search tool answers in memory-core's payload shape", async () => {
  const res = await run("memory_search", { query: "Project Kraken deploy", maxResults: 4 });
  assert.equal(res.provider, "clawhdf5");
  assert.ok(Array.isArray(res.results) && res.results.length >= 1);
  for (const r of res.results) {
    for (const k of ["path", "startLine", "endLine", "score", "snippet", "source", "citation"]) assert.ok(k in r, `result has ${k}`);
  }
  assert.ok(res.results.some((r) => /Kraken/.test(r.snippet)));
});

test("memory_get reads workspace lines and refuses paths outside the workspace", async () => {
  const ok = await run("memory_get", { path: "memory/2026-05-01.md", from: 1, lines: 50 });
  assert.equal(ok.status, "ok");
  assert.match(ok.text, /octopus tagging/);
  for (const bad of ["../../../etc/passwd", "/etc/passwd", "memory/../../outside.md"]) {
    const res = await run("memory_get", { path: bad });
    assert.equal(res.status, "error", bad);
    assert.equal(res.code, "PATH_OUTSIDE_WORKSPACE", bad);
  }
});

test("memory_forget removes a memory for good", async () => {
  const f = FACTS[2];
  const id = stored.get(f.text).id;
  const res = await run("memory_forget", { memoryId: id });
  assert.deepEqual(res.forgotten, [id]);
  const m = await manager();
  const hits = await m.search(f.query, { maxResults: 10 });
  assert.equal(hits.find((h) => h.path === `clawhdf5/${id}`), undefined);
  const read = await m.readFile({ relPath: `clawhdf5/${id}` });
  assert.equal(read.status, "not_found");
});

test("agents are isolated: another agent does not see main's memories", async () => {
  const ops = await manager("ops");
  const hits = await ops.search(FACTS[0].query, { maxResults: 10 });
  assert.equal(hits.find((h) => /Kraken/.test(h.snippet)), undefined, JSON.stringify(hits));
});

test("a killed server is restarted on the next call", async () => {
  const m = await manager();
  const pid = m.status().custom?.clawhdf5?.serverPid;
  assert.ok(Number.isInteger(pid), "status reports the server pid");
  process.kill(pid, "SIGKILL");
  assert.ok(await waitFor(() => !alive(pid), 5000), "server died");
  // The first call after the crash may be refused while the restart backoff runs; a later one succeeds.
  const hits = await waitFor(async () => {
    try {
      return await m.search("grant report deadline", { maxResults: 3 });
    } catch {
      return null;
    }
  }, 15000, 300);
  assert.ok(hits && hits.some((h) => h.path === "memory/2026-05-01.md"), "search works again after the restart");
  const newPid = m.status().custom?.clawhdf5?.serverPid;
  assert.ok(newPid && newPid !== pid);
});

test("closing the memory host stops the server; memories persist into the next one", async () => {
  const before = pidsMentioning(STORE_DIR);
  assert.equal(before.length, 1, `one server for the store: ${before}`);
  await host.closeActiveMemorySearchManagers(cfg);
  assert.ok(await waitFor(() => pidsMentioning(STORE_DIR).length === 0, 10000), "server exited after close");
  const m = await manager();
  const hits = await m.search(FACTS[1].query, { maxResults: 5 });
  assert.ok(hits.some((h) => h.snippet === FACTS[1].text), "stored memory survived the restart (checkpointed)");
});
