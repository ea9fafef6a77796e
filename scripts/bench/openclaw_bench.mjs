// Benchmarks of clawhdf5 as OpenClaw's memory provider, through a real OpenClaw gateway (driven by
// scripts/bench/openclaw_locomo.sh and scripts/bench/openclaw_10k.sh, which set up Node 26, OpenClaw and the
// environment; run it through them).
//
//   locomo  Head to head with OpenClaw's built-in memory-core on the same workspaces: LoCoMo conversations as
//           daily notes, indexed by memory-core (FTS-only, `openclaw memory index --force`) and by clawhdf5 (the
//           plugin's manager.sync through OpenClaw's in-process memory host), LoCoMo questions (categories 1-4)
//           asked through `POST /tools/invoke {"tool":"memory_search"}`, evidence recall@5 and latency.
//   tenk    memory_search round trip through the gateway on a store of N memories (query embedding included),
//           and the same queries straight to `clawhdf5 serve` over stdio (the server's share of it).
//   index-clawhdf5  (internal) runs in its own process: syncs the given agents through the plugin's manager.
//
// Environment: OC_DIR (node_modules/openclaw), CLAWHDF5_BIN, PLUGIN_DIR, BENCH_ROOT (a throwaway folder; HOME and
// TMPDIR of every OpenClaw process go under it), LOCOMO_DIR. Output: a Markdown report on stdout, JSON in --out.
import fs from "node:fs";
import path from "node:path";
import net from "node:net";
import os from "node:os";
import readline from "node:readline";
import { spawn, execFile } from "node:child_process";
import { createRequire } from "node:module";

const env = process.env;
function need(name) {
  if (!env[name]) throw new Error(`${name} is not set; run this through scripts/bench/openclaw_locomo.sh or openclaw_10k.sh`);
  return env[name];
}

// ---------------------------------------------------------------------------------------------------------
// Small helpers

function parseArgs(argv) {
  const out = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith("--")) {
      out._.push(a);
      continue;
    }
    const key = a.slice(2);
    const next = argv[i + 1];
    if (next === undefined || next.startsWith("--")) out[key] = true;
    else {
      out[key] = next;
      i++;
    }
  }
  return out;
}

function intArg(args, key, dflt) {
  if (args[key] === undefined) return dflt;
  const v = Number(args[key]);
  if (!Number.isInteger(v) || v < 0) throw new Error(`--${key} must be a non-negative integer, got ${args[key]}`);
  return v;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

function latencyStats(ms) {
  const s = [...ms].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p95: percentile(s, 95), mean: s.reduce((a, b) => a + b, 0) / (s.length || 1) };
}

const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "n/a");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const stripAnsi = (s) => s.replace(/\x1b\[[0-9;]*m/g, "");

async function freePort() {
  return await new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

function run(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { maxBuffer: 64 * 1024 * 1024, ...opts }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`${path.basename(cmd)} ${args.slice(0, 4).join(" ")} failed (${err.code ?? err.signal}): ${stripAnsi(`${stdout}\n${stderr}`).trim().slice(-3000)}`));
      } else resolve({ stdout, stderr });
    });
  });
}

function loadAvg() {
  return os.loadavg().map((x) => x.toFixed(2)).join(" ");
}

// ---------------------------------------------------------------------------------------------------------
// OpenClaw environments: one HOME per provider, a config, a gateway

class OpenClawEnv {
  /** `name` names the folder under BENCH_ROOT; `config` is the openclaw.json object. */
  constructor(name, config) {
    this.root = path.join(need("BENCH_ROOT"), name);
    this.home = path.join(this.root, "home");
    this.tmp = path.join(this.root, "tmp");
    fs.mkdirSync(path.join(this.home, ".openclaw"), { recursive: true });
    fs.mkdirSync(this.tmp, { recursive: true });
    this.logFile = path.join(this.root, "openclaw.log");
    this.config = { ...config, logging: { file: this.logFile } };
    fs.writeFileSync(path.join(this.home, ".openclaw", "openclaw.json"), JSON.stringify(this.config, null, 2));
    this.env = { ...env, HOME: this.home, TMPDIR: this.tmp, OPENCLAW_SKIP_UPDATE_CHECK: "1", NO_COLOR: "1" };
  }

  cli(args, opts = {}) {
    return run(process.execPath, [path.join(need("OC_DIR"), "openclaw.mjs"), ...args], { env: this.env, timeout: 600000, ...opts });
  }

  /** Starts `openclaw gateway run` and waits for `[gateway] ready`. */
  async startGateway() {
    const { port, auth } = this.config.gateway;
    this.port = port;
    this.token = auth.token;
    this.gatewayOut = "";
    this.gateway = spawn(process.execPath, [path.join(need("OC_DIR"), "openclaw.mjs"), "gateway", "run"], {
      env: this.env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    const collect = (c) => {
      this.gatewayOut += stripAnsi(String(c));
      if (this.gatewayOut.length > 1_000_000) this.gatewayOut = this.gatewayOut.slice(-500_000);
    };
    this.gateway.stdout.on("data", collect);
    this.gateway.stderr.on("data", collect);
    const t0 = Date.now();
    while (Date.now() - t0 < 300000) {
      if (/\[gateway\] ready\b/.test(this.gatewayOut)) return Date.now() - t0;
      if (this.gateway.exitCode !== null) break;
      await sleep(200);
    }
    const tail = this.gatewayOut.slice(-3000);
    await this.stopGateway();
    throw new Error(`gateway (${this.root}) did not become ready; output tail:\n${tail}`);
  }

  async stopGateway() {
    const g = this.gateway;
    if (!g) return;
    this.gateway = undefined;
    if (g.exitCode === null && g.signalCode === null) {
      g.kill("SIGTERM");
      const t0 = Date.now();
      while (g.exitCode === null && g.signalCode === null && Date.now() - t0 < 30000) await sleep(200);
      if (g.exitCode === null && g.signalCode === null) {
        try {
          process.kill(-g.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }
  }

  /** POST /tools/invoke; returns {ms, details} or {ms, error}. */
  async invoke(tool, args, agentId) {
    const t0 = performance.now();
    try {
      const res = await fetch(`http://127.0.0.1:${this.port}/tools/invoke`, {
        method: "POST",
        headers: { authorization: `Bearer ${this.token}`, "content-type": "application/json" },
        body: JSON.stringify({ tool, args, agentId }),
        signal: AbortSignal.timeout(60000),
      });
      const body = await res.json();
      const ms = performance.now() - t0;
      if (res.status !== 200 || body.ok !== true) return { ms, error: `HTTP ${res.status} ${JSON.stringify(body).slice(0, 500)}` };
      const details = body.result?.details;
      if (details?.unavailable || details?.disabled) return { ms, error: `unavailable: ${details.error ?? JSON.stringify(details).slice(0, 300)}` };
      return { ms, details };
    } catch (err) {
      return { ms: performance.now() - t0, error: String(err.message ?? err) };
    }
  }
}

function gatewayConfig(port, token) {
  return { mode: "local", port, bind: "loopback", auth: { mode: "token", token } };
}

function token() {
  return `bench-${Math.random().toString(16).slice(2)}${Date.now().toString(16)}`;
}

function agentsConfig(agents) {
  return {
    // several agents: OpenClaw wants the roster's ownership stated
    ownership: "explicit",
    defaults: { workspace: agents[0].workspace },
    entries: Object.fromEntries(agents.map((a) => [a.id, { workspace: a.workspace }])),
  };
}

/** memory-core in full-text mode (no embedding provider), the memory slot's default owner. */
async function memoryCoreEnv(agents) {
  return new OpenClawEnv("memory-core", {
    gateway: gatewayConfig(await freePort(), token()),
    agents: agentsConfig(agents),
    memory: { search: { provider: "none" } },
    plugins: { slots: { memory: "memory-core" } },
  });
}

/** The clawhdf5 plugin in the memory slot, memory-core off. */
async function clawhdf5Env(agents, { storeDir, pluginConfig = {}, extraPlugins = {} } = {}) {
  return new OpenClawEnv("clawhdf5", {
    gateway: gatewayConfig(await freePort(), token()),
    agents: agentsConfig(agents),
    plugins: {
      load: { paths: [need("PLUGIN_DIR"), ...Object.values(extraPlugins)] },
      slots: { memory: "clawhdf5" },
      entries: {
        "memory-core": { enabled: false },
        clawhdf5: { enabled: true, config: { binaryPath: need("CLAWHDF5_BIN"), storeDir, timeoutMs: 14000, ...pluginConfig } },
        ...Object.fromEntries(Object.keys(extraPlugins).map((id) => [id, { enabled: true }])),
      },
    },
  });
}

/** A gateway with memory-core off and no memory plugin, only the given plugins (e.g. the floor plugin). */
async function bareEnv(agents, plugins) {
  return new OpenClawEnv("bare", {
    gateway: gatewayConfig(await freePort(), token()),
    agents: agentsConfig(agents),
    plugins: {
      load: { paths: Object.values(plugins) },
      entries: { "memory-core": { enabled: false }, ...Object.fromEntries(Object.keys(plugins).map((id) => [id, { enabled: true }])) },
    },
  });
}

/** Id of the minimal plugin whose one tool measures OpenClaw's own cost of a plugin tool call. */
const FLOOR_PLUGIN = "clawhdf5-bench-floor";

/**
 * Writes a minimal OpenClaw plugin with one trivial tool, `bench_echo` (answers its argument, touches nothing):
 * what any plugin tool costs through POST /tools/invoke. Returns its folder.
 */
function writeFloorPlugin() {
  const dir = path.join(need("BENCH_ROOT"), "floor-plugin");
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, "package.json"),
    JSON.stringify({ name: FLOOR_PLUGIN, version: "0.0.0", type: "module", private: true, main: "./index.js", openclaw: { extensions: ["./index.js"] } }, null, 2),
  );
  fs.writeFileSync(
    path.join(dir, "openclaw.plugin.json"),
    JSON.stringify(
      {
        id: FLOOR_PLUGIN,
        name: "clawhdf5 bench floor",
        description: "One trivial tool, for measuring the gateway's own cost of a plugin tool call.",
        contracts: { tools: ["bench_echo"] },
        configSchema: { type: "object", additionalProperties: false, properties: {} },
      },
      null,
      2,
    ),
  );
  fs.writeFileSync(
    path.join(dir, "index.js"),
    `const tool = {
  name: "bench_echo",
  label: "Bench Echo",
  description: "Answers its argument (benchmark floor).",
  parameters: { type: "object", properties: { text: { type: "string" } }, additionalProperties: false },
  async execute(_id, params) {
    const details = { echo: String(params?.text ?? "") };
    return { content: [{ type: "text", text: JSON.stringify(details) }], details };
  },
};
export default {
  id: ${JSON.stringify(FLOOR_PLUGIN)},
  name: "clawhdf5 bench floor",
  description: "One trivial tool, for measuring the gateway's own cost of a plugin tool call.",
  register(api) {
    api.registerTool(() => tool, { name: "bench_echo" });
  },
};
`,
  );
  return dir;
}

// ---------------------------------------------------------------------------------------------------------
// LoCoMo -> daily notes

const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];

/** "1:56 pm on 8 May, 2023" -> "2023-05-08". */
export function locomoDate(s) {
  const m = /(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/.exec(String(s));
  if (!m) throw new Error(`LoCoMo session date ${JSON.stringify(s)} not understood`);
  const month = MONTHS.indexOf(m[2].toLowerCase()) + 1;
  if (month === 0) throw new Error(`LoCoMo session date ${JSON.stringify(s)}: unknown month`);
  return `${m[3]}-${String(month).padStart(2, "0")}-${String(Number(m[1])).padStart(2, "0")}`;
}

/**
 * Writes one conversation as one Markdown file per session date: memory/YYYY-MM-DD.md (layout "daily"), or the
 * same text in memory/day-NN.md (layout "undated": file names without a date, which memory-core treats as
 * evergreen, i.e. without its recency decay). Returns {files, turns, lineOf: Map<dia_id, {path, line}>}.
 */
function writeConversation(conv, workspace, layout) {
  const byDate = new Map(); // date -> lines
  const lineOf = new Map();
  const sessions = Object.keys(conv)
    .map((k) => /^session_(\d+)$/.exec(k))
    .filter((m) => m && Array.isArray(conv[m[0]]) && conv[m[0]].length > 0)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
  const names = new Map(); // date -> file name
  for (const n of sessions) {
    const when = conv[`session_${n}_date_time`];
    const date = locomoDate(when);
    if (!names.has(date)) names.set(date, layout === "undated" ? `day-${String(names.size + 1).padStart(2, "0")}` : date);
    const rel = `memory/${names.get(date)}.md`;
    if (!byDate.has(date)) byDate.set(date, [`# ${date}`, ""]);
    const lines = byDate.get(date);
    lines.push(`## Conversation ${n} (${when})`, "");
    for (const turn of conv[`session_${n}`]) {
      let text = String(turn.text ?? "").replace(/\s+/g, " ").trim();
      if (turn.blip_caption) text += ` [shared a photo: ${String(turn.blip_caption).replace(/\s+/g, " ").trim()}]`;
      lines.push(`${turn.speaker}: ${text}`);
      lineOf.set(turn.dia_id, { path: rel, line: lines.length });
    }
    lines.push("");
  }
  fs.rmSync(path.join(workspace, "memory"), { recursive: true, force: true });
  fs.mkdirSync(path.join(workspace, "memory"), { recursive: true });
  for (const [date, lines] of byDate) fs.writeFileSync(path.join(workspace, "memory", `${names.get(date)}.md`), `${lines.join("\n")}\n`);
  return { files: byDate.size, turns: lineOf.size, lineOf };
}

/** Evidence ids of a LoCoMo question ("D1:3", sometimes several in one string). */
function evidenceIds(q) {
  const out = [];
  for (const e of q.evidence ?? []) for (const id of String(e).split(/[;,\s]+/)) if (/^D\d+:\d+$/.test(id)) out.push(id);
  return out;
}

/** Conversations and questions of the run (categories 1-4, every `stride`-th, at most `limit`). */
function loadLocomo({ convs, stride, limit, questionsPerConv, layout }) {
  const dir = need("LOCOMO_DIR");
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort((a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10) || a.localeCompare(b))
    .slice(0, convs || undefined);
  const root = path.join(need("BENCH_ROOT"), "workspaces");
  const agents = [];
  const questions = [];
  let total = 0;
  let unmapped = 0;
  let index = 0;
  for (const f of files) {
    const conv = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
    const id = `locomo-${path.basename(f, ".json")}`;
    const workspace = path.join(root, id);
    const w = writeConversation(conv, workspace, layout);
    agents.push({ id, workspace, files: w.files, turns: w.turns });
    let taken = 0;
    for (const q of conv.qa ?? []) {
      if (![1, 2, 3, 4].includes(q.category)) continue;
      total += 1;
      const ev = evidenceIds(q).filter((e) => w.lineOf.has(e));
      if (ev.length === 0) {
        unmapped += 1;
        continue;
      }
      const i = index++;
      if (i % stride !== 0) continue;
      if (questionsPerConv && taken >= questionsPerConv) continue;
      taken += 1;
      questions.push({ agent: id, question: String(q.question), category: q.category, evidence: ev.map((e) => w.lineOf.get(e)) });
    }
  }
  return { agents, questions: limit ? questions.slice(0, limit) : questions, total, unmapped, files: files.length };
}

/** Whether a hit list (best first) covers an evidence line; also how many evidence lines it covers. */
function scoreHits(hits, evidence, k) {
  const top = hits.slice(0, k);
  const covered = evidence.filter((ev) =>
    top.some((h) => h.path === ev.path && Number(h.startLine) <= ev.line && ev.line <= Number(h.endLine)),
  );
  return { any: covered.length > 0, frac: covered.length / evidence.length };
}

// ---------------------------------------------------------------------------------------------------------
// Indexing

/** `openclaw memory index --force` (every agent in agents.entries, one CLI run). */
async function indexMemoryCore(oc) {
  const t0 = performance.now();
  await oc.cli(["memory", "index", "--force"]);
  return performance.now() - t0;
}

async function indexClawhdf5(oc, agents) {
  const t0 = performance.now();
  const { stdout } = await run(process.execPath, [new URL(import.meta.url).pathname, "index-clawhdf5", "--agents", agents.map((a) => a.id).join(",")], {
    env: oc.env,
    timeout: 1800000,
  });
  const total = performance.now() - t0;
  const line = stdout.trim().split("\n").pop();
  return { total, ...JSON.parse(line) };
}

/** (child process) Syncs each agent's workspace through OpenClaw's memory host and the plugin's manager. */
async function indexClawhdf5Child(args) {
  const req = createRequire(`${need("OC_DIR")}/package.json`);
  const { loadConfig } = await import(req.resolve("openclaw/plugin-sdk/config-runtime"));
  const host = await import(req.resolve("openclaw/plugin-sdk/memory-host-search"));
  const cfg = loadConfig();
  const perAgent = {};
  let syncMs = 0;
  try {
    for (const agentId of String(args.agents).split(",")) {
      const res = await host.getActiveMemorySearchManager({ cfg, agentId, purpose: "cli" });
      if (!res.manager) throw new Error(`no clawhdf5 manager for ${agentId}: ${res.error}`);
      const t0 = performance.now();
      const r = await res.manager.sync({ reason: "bench", force: true });
      const ms = performance.now() - t0;
      syncMs += ms;
      perAgent[agentId] = { ms: Math.round(ms), files: r.files_indexed, chunks: r.chunks_added };
    }
  } finally {
    await host.closeActiveMemorySearchManagers(cfg);
  }
  process.stdout.write(`${JSON.stringify({ syncMs, perAgent })}\n`);
}

// ---------------------------------------------------------------------------------------------------------
// locomo

/**
 * Asks every question of every provider's gateway, alternating which provider goes first, so that both see the
 * same load over the run. Returns {provider: rows}.
 */
async function askAll(envs, questions, k) {
  const names = Object.keys(envs);
  // Warm-up (not timed): one query per agent and provider, so that each index is open and any search-triggered
  // maintenance has happened; both providers get the same.
  const seen = new Set();
  for (const q of questions) {
    if (seen.has(q.agent)) continue;
    seen.add(q.agent);
    for (const name of names) {
      const w = await envs[name].invoke("memory_search", { query: q.question, maxResults: k, minScore: 0 }, q.agent);
      if (w.error) throw new Error(`${name}: warm-up memory_search for ${q.agent} failed: ${w.error}`);
    }
  }
  const out = Object.fromEntries(names.map((n) => [n, []]));
  questions.forEach((q, i) => (q.order = i));
  for (const q of questions) {
    const order = q.order % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      const r = await envs[name].invoke("memory_search", { query: q.question, maxResults: k, minScore: 0 }, q.agent);
      const hits = r.details?.results ?? [];
      const s = scoreHits(hits, q.evidence, k);
      const rows = out[name];
      rows.push({
        ms: r.ms,
        error: r.error,
        any: !r.error && s.any,
        frac: r.error ? 0 : s.frac,
        returned: hits.length,
        mode: r.details?.mode ?? (r.details?.provider ? `provider ${r.details.provider}` : undefined),
        lines: hits.slice(0, k).reduce((a, h) => a + (Number(h.endLine) - Number(h.startLine) + 1), 0),
        category: q.category,
        question: q.question,
        // a few raw answers in the JSON report, so the mapping can be checked by eye
        ...(rows.length < 3 ? { sample: { question: q.question, payload: Object.fromEntries(Object.entries(r.details ?? {}).filter(([key]) => key !== "results" && key !== "citations")), evidence: q.evidence, hits: hits.slice(0, k).map((h) => ({ path: h.path, startLine: h.startLine, endLine: h.endLine, score: h.score })) } } : {}),
      });
    }
    if ((q.order + 1) % 100 === 0) log(`asked ${q.order + 1} / ${questions.length}`);
  }
  return out;
}

function summarize(rows) {
  const ok = rows.filter((r) => !r.error);
  const lat = latencyStats(ok.map((r) => r.ms));
  const byCat = {};
  for (const c of [1, 2, 3, 4]) {
    const rc = rows.filter((r) => r.category === c);
    byCat[c] = { n: rc.length, recallAny: rc.filter((r) => r.any).length / (rc.length || 1) };
  }
  return {
    n: rows.length,
    errors: rows.length - ok.length,
    recallAny: rows.filter((r) => r.any).length / (rows.length || 1),
    recallFrac: rows.reduce((a, r) => a + r.frac, 0) / (rows.length || 1),
    empty: ok.filter((r) => r.returned === 0).length,
    modes: [...new Set(ok.map((r) => r.mode).filter(Boolean))],
    meanLinesPerHit: ok.reduce((a, r) => a + r.lines, 0) / Math.max(1, ok.reduce((a, r) => a + Math.min(r.returned, 5), 0)),
    latency: lat,
    byCategory: byCat,
  };
}

async function locomo(args) {
  const k = intArg(args, "k", 5);
  const stride = Math.max(1, intArg(args, "stride", 1));
  const limit = intArg(args, "limit", 0);
  const convs = intArg(args, "convs", 0);
  const perConv = intArg(args, "per-conv", 0);
  const layout = String(args.layout ?? "daily");
  if (!["daily", "undated"].includes(layout)) throw new Error(`--layout must be daily or undated, got ${layout}`);
  const providers = String(args.providers ?? "memory-core,clawhdf5").split(",");
  // clawhdf5's search mode (the plugin's `embedding.mode`): hybrid (its default), vector or rrf.
  const searchMode = args["search-mode"] === undefined ? undefined : String(args["search-mode"]);
  if (searchMode !== undefined && !["hybrid", "vector", "rrf"].includes(searchMode)) {
    throw new Error(`--search-mode must be hybrid, vector or rrf, got ${searchMode}`);
  }
  const data = loadLocomo({ convs, stride, limit, questionsPerConv: perConv, layout });
  const agents = data.agents.filter((a) => data.questions.some((q) => q.agent === a.id));
  const started = new Date().toISOString();
  const report = {
    started,
    machine: { nproc: os.cpus().length, cpu: os.cpus()[0]?.model, loadBefore: loadAvg() },
    settings: { k, stride, limit, convs, perConv, layout, providers, searchMode: searchMode ?? "hybrid" },
    data: { conversations: agents.length, questionsCat1to4: data.total, unmappedEvidence: data.unmapped, asked: data.questions.length, files: agents.reduce((a, x) => a + x.files, 0), turns: agents.reduce((a, x) => a + x.turns, 0) },
    providers: {},
  };
  log(`locomo: ${agents.length} conversations, ${report.data.files} ${layout} notes, ${report.data.turns} turns; asking ${data.questions.length} of ${data.total} questions (categories 1-4, stride ${stride}${limit ? `, limit ${limit}` : ""})`);

  const envs = {};
  try {
    for (const provider of providers) {
      let oc;
      if (provider === "memory-core") oc = await memoryCoreEnv(agents);
      else if (provider === "clawhdf5") oc = await clawhdf5Env(agents, {
          storeDir: path.join(need("BENCH_ROOT"), "clawhdf5-store"),
          pluginConfig: searchMode ? { embedding: { mode: searchMode } } : {},
        });
      else throw new Error(`unknown provider ${provider} (memory-core or clawhdf5)`);
      const entry = { loadBeforeIndex: loadAvg() };
      report.providers[provider] = entry;
      log(`${provider}: indexing ${agents.length} workspaces`);
      if (provider === "memory-core") entry.indexMs = await indexMemoryCore(oc);
      else {
        const ix = await indexClawhdf5(oc, agents);
        entry.indexMs = ix.total;
        entry.syncMs = ix.syncMs;
        entry.perAgent = ix.perAgent;
      }
      log(`${provider}: indexed in ${fmt(entry.indexMs / 1000)} s; starting its gateway`);
      entry.gatewayReadyMs = await oc.startGateway();
      envs[provider] = oc;
    }
    report.loadBeforeQueries = loadAvg();
    const rows = await askAll(envs, data.questions, k);
    report.loadAfterQueries = loadAvg();
    // With each provider's own defaults (no minScore in the call; memory-core's configured default is 0.35): how
    // many of the first questions come back empty.
    const probe = data.questions.slice(0, intArg(args, "default-probe", 20));
    for (const provider of providers) {
      let empty = 0;
      for (const q of probe) {
        const r = await envs[provider].invoke("memory_search", { query: q.question, maxResults: k }, q.agent);
        if (!r.error && (r.details?.results ?? []).length === 0) empty += 1;
      }
      report.providers[provider].defaultMinScoreProbe = { asked: probe.length, empty };
    }
    for (const provider of providers) {
      const entry = report.providers[provider];
      entry.summary = summarize(rows[provider]);
      entry.firstErrors = rows[provider].filter((r) => r.error).slice(0, 3).map((r) => r.error);
      entry.samples = rows[provider].filter((r) => r.sample).map((r) => r.sample);
      entry.emptyAnswers = rows[provider].filter((r) => !r.error && r.returned === 0).map((r) => r.question);
      const s = entry.summary;
      log(`${provider}: recall@${k} ${fmt(100 * s.recallAny)} %, p50 ${fmt(s.latency.p50)} ms, p95 ${fmt(s.latency.p95)} ms, errors ${s.errors}`);
    }
  } finally {
    for (const oc of Object.values(envs)) await oc.stopGateway();
  }
  report.finished = new Date().toISOString();
  writeOut(args, `openclaw_locomo_${layout}.json`, report);
  console.log(locomoMarkdown(report));
}

function locomoMarkdown(r) {
  const k = r.settings.k;
  const lines = [];
  lines.push(`LoCoMo through the OpenClaw gateway (${r.started}; ${r.machine.nproc} CPUs, ${r.machine.cpu}; load ${r.loadBeforeQueries} before the queries, ${r.loadAfterQueries} after)`);
  lines.push("");
  const files = r.settings.layout === "daily" ? "daily notes memory/YYYY-MM-DD.md" : "undated notes memory/day-NN.md";
  lines.push(`${r.data.conversations} conversations as ${r.data.files} ${files} (${r.data.turns} turns, one per line); ${r.data.asked} questions asked of ${r.data.questionsCat1to4} in categories 1-4 (stride ${r.settings.stride}${r.settings.limit ? `, limit ${r.settings.limit}` : ""}; ${r.data.unmappedEvidence} without mappable evidence left out). Each question goes to its conversation's agent as POST /tools/invoke memory_search {query, maxResults: ${k}, minScore: 0}, to both gateways in turn.`);
  lines.push("");
  lines.push(`| provider | mode | evidence recall@${k} (any) | evidence coverage@${k} | cat 1 / 2 / 3 / 4 recall | p50 ms | p95 ms | mean ms | lines per hit | empty | errors | empty with default minScore | index s |`);
  lines.push("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const [name, e] of Object.entries(r.providers)) {
    const s = e.summary;
    const cats = [1, 2, 3, 4].map((c) => fmt(100 * s.byCategory[c].recallAny, 0)).join(" / ");
    lines.push(
      `| ${name} | ${s.modes.join(", ")} | ${fmt(100 * s.recallAny)} % | ${fmt(100 * s.recallFrac)} % | ${cats} | ${fmt(s.latency.p50)} | ${fmt(s.latency.p95)} | ${fmt(s.latency.mean)} | ${fmt(s.meanLinesPerHit)} | ${s.empty} | ${s.errors} | ${e.defaultMinScoreProbe ? `${e.defaultMinScoreProbe.empty} of ${e.defaultMinScoreProbe.asked}` : "n/a"} | ${fmt(e.indexMs / 1000)} |`,
    );
  }
  return lines.join("\n");
}

// ---------------------------------------------------------------------------------------------------------
// tenk

/** N memories as JSON lines for `clawhdf5 import`: LoCoMo turns, then session observations, cycled if needed. */
function tenkLines(n) {
  const dir = need("LOCOMO_DIR");
  const texts = [];
  const queries = [];
  for (const f of fs.readdirSync(dir).filter((x) => x.endsWith(".json")).sort()) {
    const conv = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
    for (const [key, v] of Object.entries(conv)) {
      if (/^session_\d+$/.test(key) && Array.isArray(v)) for (const t of v) texts.push(`${t.speaker}: ${String(t.text).replace(/\s+/g, " ")}`);
    }
    for (const [key, v] of Object.entries(conv)) {
      if (/^session_\d+_observation$/.test(key) && v && typeof v === "object") {
        for (const facts of Object.values(v)) for (const fact of facts ?? []) if (Array.isArray(fact) && fact[0]) texts.push(String(fact[0]));
      }
    }
    for (const q of conv.qa ?? []) if ([1, 2, 3, 4].includes(q.category)) queries.push(String(q.question));
  }
  const lines = [];
  for (let i = 0; i < n; i++) {
    const base = texts[i % texts.length];
    const text = i < texts.length ? base : `${base} (copy ${Math.floor(i / texts.length)})`;
    lines.push(JSON.stringify({ text, agent: "tenk", session: `s${i % 97}` }));
  }
  return { lines, distinct: Math.min(n, texts.length), queries };
}

/** `clawhdf5 serve` over stdio from this process (no OpenClaw, no plugin): the server's own share. */
async function openDirectServe(storeDir, k) {
  const child = spawn(need("CLAWHDF5_BIN"), ["serve", "--dir", storeDir], { stdio: ["pipe", "pipe", "inherit"] });
  const rl = readline.createInterface({ input: child.stdout });
  const waiting = new Map();
  rl.on("line", (l) => {
    const m = JSON.parse(l);
    const w = waiting.get(m.id);
    if (w) {
      waiting.delete(m.id);
      w(m);
    }
  });
  let id = 0;
  const rpc = (method, params) =>
    new Promise((resolve) => {
      const my = ++id;
      waiting.set(my, resolve);
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: my, method, params })}\n`);
    });
  return {
    async call(query) {
      const t0 = performance.now();
      const r = await rpc("search", { agent: "tenk", query, k });
      const ms = performance.now() - t0;
      if (r.error) return { ms, error: JSON.stringify(r.error) };
      return { ms, mode: r.result.mode, hits: r.result.results.length };
    },
    async close() {
      try {
        await rpc("shutdown", {});
      } finally {
        child.kill("SIGTERM");
      }
    },
  };
}

/**
 * The plugin's memory_search tool in this Node process, without OpenClaw: its execute() over the plugin's runtime,
 * manager and RPC client, which spawns its own `clawhdf5 serve` (the plugin's share, beside openDirectServe).
 */
async function openPluginDirect(storeDir, workspace, k) {
  const lib = (f) => path.join(need("PLUGIN_DIR"), "lib", f);
  const { resolvePluginConfig } = await import(lib("config.js"));
  const { createMemoryRuntime } = await import(lib("runtime.js"));
  const { createMemoryTools } = await import(lib("tools.js"));
  const stateDir = path.join(need("BENCH_ROOT"), "plugin-direct-state");
  const settings = resolvePluginConfig({ binaryPath: need("CLAWHDF5_BIN"), storeDir, workspace, timeoutMs: 14000 }, { stateDir });
  const runtime = createMemoryRuntime({ settings, logger: {}, stateDir });
  const search = createMemoryTools({ getManager: () => runtime.acquire({ cfg: {}, agentId: "tenk" }), ctx: { agentId: "tenk" } }).find(
    (t) => t.name === "memory_search",
  );
  return {
    async call(query) {
      const t0 = performance.now();
      const r = await search.execute("bench", { query, maxResults: k });
      const ms = performance.now() - t0;
      if (r.details?.unavailable) return { ms, error: r.details.error };
      return { ms, mode: r.details.mode, hits: r.details.results.length };
    },
    close: () => runtime.closeAllMemorySearchManagers(),
  };
}

/** A copy of a store folder (its files but the writer lock), so that another process can open it. */
function copyStore(from, to) {
  fs.mkdirSync(to, { recursive: true });
  for (const f of fs.readdirSync(from)) if (!f.endsWith(".lock")) fs.copyFileSync(path.join(from, f), path.join(to, f));
  return to;
}

/** clawhdf5-search-hops (built next to CLAWHDF5_BIN): the server's search request piece by piece. */
async function searchHops(storeDir, queriesFile, k, gapMs = 0) {
  const bin = path.join(path.dirname(need("CLAWHDF5_BIN")), "clawhdf5-search-hops");
  if (!fs.existsSync(bin)) return { missing: `${bin} not found (cargo build --release -p clawhdf5-backend builds it)` };
  const args = ["--dir", storeDir, "--agent", "tenk", "--queries", queriesFile, "--k", String(k), "--gap-ms", String(gapMs), "--json"];
  const { stdout } = await run(bin, args, { timeout: 1800000 });
  return JSON.parse(stdout.trim().split("\n").pop());
}

/** Idle time before each piece in the second search-hops pass (a request after a pause, caches cold). */
const HOPS_GAP_MS = 10;

/** Calls each route in turn for every query (the order rotating), so that all routes see the same load. */
async function interleaved(routes, queries) {
  const names = Object.keys(routes);
  const out = Object.fromEntries(names.map((n) => [n, { ms: [], errors: 0, modes: new Set(), hits: 0, firstError: undefined }]));
  for (let i = 0; i < queries.length; i++) {
    const order = names.map((_, j) => names[(i + j) % names.length]);
    for (const name of order) {
      const r = await routes[name](queries[i]);
      const o = out[name];
      if (r.error) {
        o.errors += 1;
        o.firstError ??= r.error;
        continue;
      }
      o.ms.push(r.ms);
      if (r.mode) o.modes.add(r.mode);
      o.hits += r.hits ?? 0;
    }
  }
  return Object.fromEntries(
    names.map((n) => {
      const o = out[n];
      return [n, { ...latencyStats(o.ms), errors: o.errors, firstError: o.firstError, modes: [...o.modes], meanHits: o.hits / Math.max(1, o.ms.length) }];
    }),
  );
}

async function tenk(args) {
  const n = intArg(args, "n", 10000);
  const nq = intArg(args, "queries", 300);
  const k = intArg(args, "k", 5);
  const bare = args["no-bare-gateway"] !== true;
  const started = new Date().toISOString();
  // --store DIR keeps the store in DIR and reuses it when it is already there (no import).
  const storeDir = args.store ? path.resolve(String(args.store)) : path.join(need("BENCH_ROOT"), "tenk-store");
  fs.mkdirSync(storeDir, { recursive: true });
  const reuse = fs.existsSync(path.join(storeDir, "tenk.h5"));
  const { lines, distinct, queries } = tenkLines(n);
  const jsonl = path.join(need("BENCH_ROOT"), "tenk.jsonl");
  fs.writeFileSync(jsonl, `${lines.join("\n")}\n`);
  const step = Math.max(1, Math.floor(queries.length / nq));
  const qs = queries.filter((_, i) => i % step === 0).slice(0, nq);
  const queriesFile = path.join(need("BENCH_ROOT"), "tenk-queries.txt");
  fs.writeFileSync(queriesFile, `${qs.map((q) => q.replace(/\s+/g, " ").trim()).join("\n")}\n`);
  let importMs = NaN;
  if (reuse) log(`tenk: reusing the store in ${storeDir} (no import)`);
  else {
    log(`tenk: importing ${n} memories (${distinct} distinct texts) with clawhdf5 import`);
    const t0 = performance.now();
    await run(need("CLAWHDF5_BIN"), ["import", "--quiet", "--store", path.join(storeDir, "tenk.h5"), jsonl], { timeout: 3600000 });
    importMs = performance.now() - t0;
  }
  const { stdout: stats } = await run(need("CLAWHDF5_BIN"), ["stats", "--json", "--store", path.join(storeDir, "tenk.h5")]).catch(() => ({ stdout: "" }));
  log(`tenk: ${reuse ? "store reused" : `imported in ${fmt(importMs / 1000)} s`}; ${qs.length} queries`);

  const report = {
    started,
    machine: { nproc: os.cpus().length, cpu: os.cpus()[0]?.model, loadBefore: loadAvg() },
    settings: { n, queries: qs.length, k },
    importMs,
    stats: stats.trim(),
  };
  report.loadBeforeHops = loadAvg();
  report.hops = await searchHops(storeDir, queriesFile, k);
  report.hopsIdle = report.hops.missing ? undefined : await searchHops(storeDir, queriesFile, k, HOPS_GAP_MS);
  log(`tenk: server pieces measured${report.hops.missing ? ` (skipped: ${report.hops.missing})` : ""}`);
  // Each route that runs its own server gets its own copy of the store (one writer per store file).
  const ws = path.join(need("BENCH_ROOT"), "tenk-workspace");
  fs.mkdirSync(ws, { recursive: true });
  const direct = await openDirectServe(copyStore(storeDir, path.join(need("BENCH_ROOT"), "store-direct")), k);
  const plugin = await openPluginDirect(copyStore(storeDir, path.join(need("BENCH_ROOT"), "store-plugin")), ws, k);
  const floorPlugin = writeFloorPlugin();
  const agents = [{ id: "tenk", workspace: ws }];
  const oc = await clawhdf5Env(agents, { storeDir, extraPlugins: { [FLOOR_PLUGIN]: floorPlugin } });
  const bareOc = bare ? await bareEnv(agents, { [FLOOR_PLUGIN]: floorPlugin }) : null;
  try {
    report.gatewayReadyMs = await oc.startGateway();
    if (bareOc) report.bareGatewayReadyMs = await bareOc.startGateway();
    const search = async (q) => {
      const r = await oc.invoke("memory_search", { query: q, maxResults: k }, "tenk");
      return r.error ? r : { ms: r.ms, mode: r.details.mode, hits: r.details.results.length };
    };
    // The floors: memory_get of a path outside the workspace, which the plugin refuses in JavaScript without
    // calling the server; and a trivial tool of a minimal plugin, in the same gateway and (unless
    // --no-bare-gateway) in a gateway without clawhdf5.
    const refusedGet = async () => {
      const r = await oc.invoke("memory_get", { path: "../outside.md" }, "tenk");
      if (r.error || r.details?.code !== "PATH_OUTSIDE_WORKSPACE") return { ms: r.ms, error: r.error ?? JSON.stringify(r.details) };
      return { ms: r.ms };
    };
    const echo = (env) => async (q) => {
      const r = await env.invoke("bench_echo", { text: q }, "tenk");
      if (r.error || r.details?.echo !== q) return { ms: r.ms, error: r.error ?? JSON.stringify(r.details) };
      return { ms: r.ms };
    };
    const routes = {
      search,
      refusedGet,
      echo: echo(oc),
      ...(bareOc ? { bareEcho: echo(bareOc) } : {}),
      plugin: plugin.call,
      direct: direct.call,
    };
    // Warm-up (not timed): opens the store in every server, runs the plugin's first workspace sync.
    for (const [name, route] of Object.entries(routes)) {
      const w = await route("warm up");
      if (w.error) throw new Error(`warm-up of ${name} failed: ${w.error}`);
    }
    report.loadBeforeRoutes = loadAvg();
    const r = await interleaved(routes, qs);
    report.gateway = r.search;
    report.gatewayFloor = r.refusedGet;
    report.gatewayEcho = r.echo;
    if (r.bareEcho) report.bareGatewayEcho = r.bareEcho;
    report.pluginDirect = r.plugin;
    report.direct = r.direct;
  } finally {
    await oc.stopGateway();
    if (bareOc) await bareOc.stopGateway();
    await plugin.close().catch(() => {});
    await direct.close().catch(() => {});
  }
  report.loadAfter = loadAvg();
  report.finished = new Date().toISOString();
  log(`tenk: gateway p50 ${fmt(report.gateway.p50)} ms p95 ${fmt(report.gateway.p95)} ms (${report.gateway.modes})`);
  writeOut(args, "openclaw_10k.json", report);
  console.log(tenkMarkdown(report));
}

function tenkMarkdown(report) {
  const { n, k } = report.settings;
  const row = (route, s, mode = "-") => `| ${route} | ${mode} | ${fmt(s.p50)} | ${fmt(s.p95)} | ${fmt(s.mean)} | ${s.errors ?? 0} |`;
  const L = [];
  L.push(`memory_search at ${n} memories (${report.started}; ${report.machine.nproc} CPUs, ${report.machine.cpu}; load ${report.machine.loadBefore} at the start, ${report.loadBeforeRoutes} before the routes, ${report.loadAfter} after)`);
  L.push("");
  L.push(`${Number.isFinite(report.importMs) ? `Store built with \`clawhdf5 import\` in ${fmt(report.importMs / 1000)} s (MiniLM embeddings computed on import).` : "Store reused from an earlier run (--store)."} ${report.settings.queries} LoCoMo questions, maxResults ${k}, one at a time; the routes take turns query by query (the first route rotating), so that they share the load.`);
  L.push("");
  L.push("| route | mode | p50 ms | p95 ms | mean ms | errors |");
  L.push("| --- | --- | ---: | ---: | ---: | ---: |");
  L.push(row("POST /tools/invoke memory_search (gateway -> plugin -> clawhdf5 serve)", report.gateway, report.gateway.modes.join(",")));
  L.push(row("gateway floor: POST /tools/invoke memory_get refused by the plugin (no server call)", report.gatewayFloor));
  L.push(row("gateway floor: POST /tools/invoke bench_echo, a minimal plugin's trivial tool, same gateway", report.gatewayEcho));
  if (report.bareGatewayEcho) L.push(row("gateway floor: bench_echo in a gateway without clawhdf5", report.bareGatewayEcho));
  L.push(row("plugin's memory_search tool in Node without OpenClaw (plugin -> clawhdf5 serve)", report.pluginDirect, report.pluginDirect.modes.join(",")));
  L.push(row("clawhdf5 serve over stdio from Node (no OpenClaw, no plugin)", report.direct, report.direct.modes.join(",")));
  const h = report.hops;
  if (h && !h.missing) {
    L.push("");
    L.push(`Inside the server (clawhdf5-search-hops, in process; load ${report.loadBeforeHops} before): ${h.records} records, embedder threads ${h.threads}, forward passes per search ${fmt(h.forward_passes_per_search, 2)}. The pieces are timed back to back, then again with ${HOPS_GAP_MS} ms idle before each (\`--gap-ms ${HOPS_GAP_MS}\`), as a request that arrives after a pause finds the caches.`);
    L.push("");
    L.push(`| piece | p50 ms | p95 ms | mean ms | min ms | p50 ms after ${HOPS_GAP_MS} ms idle |`);
    L.push("| --- | ---: | ---: | ---: | ---: | ---: |");
    const order = [
      ["tokenize", "tokenizer alone"],
      ["embed", "query embedding (server's embedder: tokenize + forward pass)"],
      ["embed_1_thread", "query embedding, one thread"],
      ["search_texts_one_by_one", "the texts a search embeds (its query; a graph expansion goes through the keyword stage), one pass each"],
      ["search_texts_one_batch", "the same texts in one embed_batch call"],
      ["search_texts_one_batch_1_thread", "the same texts in one embed_batch call, one thread"],
      ["store_search_given_vector", "store search, query vector given (no forward pass)"],
      ["store_search_full", "store search as the server runs it (embedding included)"],
      ["record_access", "access statistics logged for the returned records"],
      ["answer_json", "answer to JSON text"],
      ["serve_in_process", "whole request through the JSON-RPC server loop, in process"],
    ];
    for (const [name, what] of order) {
      const s = h.ms[name];
      const idle = report.hopsIdle?.ms?.[name];
      if (s) L.push(`| ${what} (\`${name}\`) | ${fmt(s.p50, 2)} | ${fmt(s.p95, 2)} | ${fmt(s.mean, 2)} | ${fmt(s.min, 2)} | ${idle ? fmt(idle.p50, 2) : "-"} |`);
    }
  } else if (h?.missing) {
    L.push("");
    L.push(`Server pieces not measured: ${h.missing}.`);
  }
  return L.join("\n");
}

// ---------------------------------------------------------------------------------------------------------

function log(msg) {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

function writeOut(args, name, report) {
  if (!args.out) return;
  fs.mkdirSync(args.out, { recursive: true });
  fs.writeFileSync(path.join(args.out, name), `${JSON.stringify(report, null, 2)}\n`);
}

const args = parseArgs(process.argv.slice(2));
const cmd = args._[0];
const commands = { locomo, tenk, "index-clawhdf5": indexClawhdf5Child };
if (!commands[cmd]) {
  console.error("usage: openclaw_bench.mjs locomo|tenk [options] (run through scripts/bench/openclaw_locomo.sh / openclaw_10k.sh)");
  process.exit(2);
}
try {
  await commands[cmd](args);
} catch (err) {
  console.error(`openclaw_bench ${cmd}: ${err.stack ?? err}`);
  process.exitCode = 1;
}
