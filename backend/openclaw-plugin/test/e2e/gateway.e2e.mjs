// End to end through a real OpenClaw gateway: `openclaw gateway run` on loopback with token auth, then
// POST /tools/invoke and `openclaw gateway call memory.search`. Run by scripts/test-openclaw.sh.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFile } from "node:child_process";
import { FACTS, OPENCLAW_MJS, STORE_DIR, alive, pidsMentioning, waitFor } from "./common.mjs";

const PORT = Number(process.env.E2E_PORT);
const TOKEN = process.env.E2E_TOKEN;
const READY_TIMEOUT_MS = Number(process.env.E2E_GATEWAY_READY_MS ?? 240000);
const BASE = `http://127.0.0.1:${PORT}`;

let gateway;
let output = "";
const stripAnsi = (s) => s.replace(/\x1b\[[0-9;]*m/g, "");

before(async () => {
  assert.ok(PORT > 0 && TOKEN, "E2E_PORT and E2E_TOKEN are set");
  gateway = spawn(process.execPath, [OPENCLAW_MJS, "gateway", "run"], { stdio: ["ignore", "pipe", "pipe"], env: process.env });
  const collect = (chunk) => {
    output += stripAnsi(String(chunk));
    if (output.length > 2_000_000) output = output.slice(-1_000_000);
  };
  gateway.stdout.on("data", collect);
  gateway.stderr.on("data", collect);
  const ready = await waitFor(() => /\[gateway\] ready\b/.test(output) || gateway.exitCode !== null, READY_TIMEOUT_MS, 250);
  if (!ready || gateway.exitCode !== null) {
    throw new Error(`gateway did not become ready in ${READY_TIMEOUT_MS} ms (exit ${gateway.exitCode}); output tail:\n${output.slice(-4000)}`);
  }
});

after(async () => {
  if (!gateway) return;
  if (gateway.exitCode === null && gateway.signalCode === null) {
    gateway.kill("SIGTERM");
    const stopped = await waitFor(() => gateway.exitCode !== null || gateway.signalCode !== null, 30000, 200);
    if (!stopped) gateway.kill("SIGKILL");
  }
  // The plugin's server stops with the gateway (gateway_stop / closeAllMemorySearchManagers); never leave one.
  const gone = await waitFor(() => pidsMentioning(STORE_DIR).length === 0, 15000, 200);
  for (const pid of pidsMentioning(STORE_DIR)) if (alive(pid)) process.kill(pid, "SIGKILL");
  assert.ok(gone, "clawhdf5 serve exited with the gateway");
});

async function invoke(tool, args, extra = {}) {
  const res = await fetch(`${BASE}/tools/invoke`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    // Several agents are configured, so every call names its agent.
    body: JSON.stringify({ tool, args, agentId: "main", ...extra }),
    signal: AbortSignal.timeout(30000),
  });
  const body = await res.json();
  assert.equal(res.status, 200, `${tool}: HTTP ${res.status} ${JSON.stringify(body)}`);
  assert.equal(body.ok, true, JSON.stringify(body));
  const details = body.result.details;
  assert.deepEqual(JSON.parse(body.result.content[0].text), details);
  return details;
}

function gatewayCall(method, params) {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [OPENCLAW_MJS, "gateway", "call", method, "--params", JSON.stringify(params), "--json", "--url", `ws://127.0.0.1:${PORT}`, "--token", TOKEN],
      { env: process.env, timeout: 90000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) {
          const said = stripAnsi(`${stdout}\n${stderr}`).trim().slice(-2000);
          return reject(new Error(`openclaw gateway call ${method} failed (exit ${err.code}): ${said}`));
        }
        const text = stdout.trim();
        try {
          resolve(JSON.parse(text.slice(text.indexOf("{"))));
        } catch {
          reject(new Error(`openclaw gateway call ${method} printed no JSON:\n${text.slice(-2000)}`));
        }
      },
    );
  });
}

const stored = new Map();

test("auth is enforced on /tools/invoke", async () => {
  const res = await fetch(`${BASE}/tools/invoke`, {
    method: "POST",
    headers: { authorization: "Bearer wrong-token", "content-type": "application/json" },
    body: JSON.stringify({ tool: "memory_search", args: { query: "x" } }),
    signal: AbortSignal.timeout(30000),
  });
  assert.ok(res.status === 401 || res.status === 403, `HTTP ${res.status}`);
});

test("POST /tools/invoke memory_store saves memories", async () => {
  for (const f of FACTS) {
    const res = await invoke("memory_store", { text: f.text });
    assert.equal(res.stored, true, JSON.stringify(res));
    stored.set(f.text, res.id);
  }
});

test("POST /tools/invoke memory_search finds stored memories and workspace notes, with citations", async () => {
  for (const f of FACTS) {
    const res = await invoke("memory_search", { query: f.query, maxResults: 5 });
    assert.equal(res.provider, "clawhdf5");
    const id = stored.get(f.text);
    const hit = res.results.slice(0, 3).find((r) => r.path === `clawhdf5/${id}`);
    assert.ok(hit, `"${f.query}" → memory ${id} in the top 3: ${JSON.stringify(res.results.map((r) => r.path))}`);
    assert.equal(hit.citation, `clawhdf5/${id}#L1`);
  }
  // The gateway's manager syncs the workspace before its first search.
  const notes = await invoke("memory_search", { query: "grant report deadline" });
  const note = notes.results.slice(0, 3).find((r) => r.path === "memory/2026-05-01.md");
  assert.ok(note, `daily note in the top 3: ${JSON.stringify(notes.results.map((r) => r.path))}`);
  assert.match(note.citation, /^memory\/2026-05-01\.md#L\d+(-L\d+)?$/);
  const lines = await invoke("memory_get", { path: note.path, from: note.startLine, lines: note.endLine - note.startLine + 1 });
  assert.equal(lines.status, "ok");
  assert.match(lines.text, /June 12/);
});

test("POST /tools/invoke memory_get refuses a path outside the workspace", async () => {
  const res = await invoke("memory_get", { path: "../../../../etc/passwd" });
  assert.equal(res.status, "error");
  assert.equal(res.code, "PATH_OUTSIDE_WORKSPACE");
  assert.equal(res.text, "");
});

test("openclaw gateway call memory.search reaches the plugin's manager", async () => {
  const res = await gatewayCall("memory.search", { query: FACTS[1].query, maxResults: 5, agentId: "main" });
  assert.equal(res.agentId, "main");
  assert.equal(res.provider, "clawhdf5");
  const id = stored.get(FACTS[1].text);
  const hit = res.results.find((r) => r.path === `clawhdf5/${id}`);
  assert.ok(hit, JSON.stringify(res.results.map((r) => r.path)));
  assert.equal(hit.snippet, FACTS[1].text);
  assert.equal(hit.citation, `clawhdf5/${id}#L1`);
});

test("openclaw gateway call memory.search keeps agents apart", async () => {
  const res = await gatewayCall("memory.search", { query: FACTS[1].query, maxResults: 10, agentId: "ops" });
  assert.equal(res.agentId, "ops");
  assert.equal(res.results.find((r) => r.snippet === FACTS[1].text), undefined, JSON.stringify(res.results));
});

test("one clawhdf5 server serves the whole gateway", () => {
  assert.equal(pidsMentioning(STORE_DIR).length, 1);
});

test("POST /tools/invoke memory_forget by query deletes one clear match and lists ambiguous ones", async () => {
  const a = await invoke("memory_store", { text: "The spare house key is under the blue flowerpot." });
  const b = await invoke("memory_store", { text: "The spare car key is in the kitchen drawer." });
  const ambiguous = await invoke("memory_forget", { query: "spare key" });
  assert.deepEqual(ambiguous.forgotten, [], JSON.stringify(ambiguous));
  assert.ok(ambiguous.candidates.some((c) => c.memoryId === a.id) && ambiguous.candidates.some((c) => c.memoryId === b.id));
  const clear = await invoke("memory_forget", { query: "spare house key blue flowerpot" });
  assert.deepEqual(clear.forgotten, [a.id], JSON.stringify(clear));
  const after = await invoke("memory_search", { query: "blue flowerpot" });
  assert.equal(after.results.find((r) => r.path === `clawhdf5/${a.id}`), undefined);
});

test("POST /tools/invoke memory_search keeps only memories with the given tags", async () => {
  const work = await invoke("memory_store", { text: "The quarterly budget review is on Thursday.", tags: ["work"] });
  const home = await invoke("memory_store", { text: "The budget for the kitchen renovation is 9000 euros.", tags: ["home"] });
  const all = await invoke("memory_search", { query: "budget", maxResults: 10 });
  const paths = all.results.map((r) => r.path);
  assert.ok(paths.includes(`clawhdf5/${work.id}`) && paths.includes(`clawhdf5/${home.id}`), JSON.stringify(paths));
  const onlyWork = await invoke("memory_search", { query: "budget", maxResults: 10, tags: ["work"] });
  assert.deepEqual(onlyWork.results.map((r) => r.path), [`clawhdf5/${work.id}`]);
});

test("POST /tools/invoke memory_search finds CJK memories", async () => {
  const zh = await invoke("memory_store", { text: "我的猫叫小花，它喜欢吃鱼。" });
  const ja = await invoke("memory_store", { text: "東京の会議は月曜日です。" });
  const cat = await invoke("memory_search", { query: "小花" });
  assert.equal(cat.results[0]?.path, `clawhdf5/${zh.id}`, JSON.stringify(cat.results.map((r) => r.snippet)));
  const meeting = await invoke("memory_search", { query: "会議" });
  assert.equal(meeting.results[0]?.path, `clawhdf5/${ja.id}`, JSON.stringify(meeting.results.map((r) => r.snippet)));
});
