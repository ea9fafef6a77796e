#!/usr/bin/env node
// A stand-in for `clawhdf5 serve` in unit tests: speaks the same JSON-RPC-over-stdio protocol with an
// in-memory store and plain word-overlap scoring. Failure knobs (environment):
//   FAKE_SERVE_HANG=<method>        never answer that method
//   FAKE_SERVE_EXIT_ON=<method>     exit 3 on receiving that method
//   FAKE_SERVE_EXIT_ONCE=<file>     ...only when <file> does not exist yet (it is created first)
//   FAKE_SERVE_DELAY_MS=<n>         delay every answer
//   FAKE_SERVE_DELAY_SYNC_MS=<n>    delay the answers to sync only
//   FAKE_SERVE_LOG=<file>           append every request line and the argv (as {"argv": [...]})
//   FAKE_SERVE_NOISE=1              write a non-JSON line to stdout before anything else
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";

const env = process.env;
const logFile = env.FAKE_SERVE_LOG;
if (logFile) fs.appendFileSync(logFile, `${JSON.stringify({ argv: process.argv.slice(2), pid: process.pid })}\n`);
if (env.FAKE_SERVE_NOISE) process.stdout.write("fake serve starting (not JSON)\n");

const stores = new Map(); // agent -> {records: Map<id, rec>, files: Map<path, text>}
let nextId = 1;
const dirArg = process.argv.indexOf("--dir");
const storeDir = dirArg >= 0 ? process.argv[dirArg + 1] : undefined;

function storeFile(agent) {
  return storeDir ? path.join(storeDir, `${agent}.fake.json`) : undefined;
}

function store(agent) {
  const a = agent ?? "main";
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(a)) throw rpcErr(-32602, `invalid agent id ${JSON.stringify(a)}`);
  if (!stores.has(a)) {
    const s = { records: new Map(), files: new Map(), workspace: undefined };
    const file = storeFile(a);
    if (file && fs.existsSync(file)) {
      const saved = JSON.parse(fs.readFileSync(file, "utf8"));
      for (const r of saved.records) s.records.set(r.id, r);
      for (const [k, v] of saved.files) s.files.set(k, v);
      nextId = Math.max(nextId, saved.nextId);
    }
    stores.set(a, s);
  }
  return stores.get(a);
}

/** Persists an agent's store (the fake's stand-in for a durable save). */
function persist(agent) {
  const file = storeFile(agent ?? "main");
  if (!file) return;
  const s = stores.get(agent ?? "main");
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify({ nextId, records: [...s.records.values()], files: [...s.files] }));
}

function rpcErr(code, message, data) {
  const e = new Error(message);
  e.rpc = { code, message, ...(data ? { data } : {}) };
  return e;
}

const words = (t) => String(t).toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

function score(query, text) {
  const q = new Set(words(query));
  if (q.size === 0) return 0;
  const t = new Set(words(text));
  let hit = 0;
  for (const w of q) if (t.has(w)) hit += 1;
  return hit / q.size;
}

function publicRecord(r) {
  const { agent, ...rest } = r;
  return rest;
}

function chunkFile(rel, text) {
  const lines = text.split("\n");
  const chunks = [];
  let start = 0;
  while (start < lines.length) {
    // paragraphs: runs of non-empty lines
    while (start < lines.length && !lines[start].trim()) start += 1;
    if (start >= lines.length) break;
    let end = start;
    while (end + 1 < lines.length && lines[end + 1].trim()) end += 1;
    chunks.push({ path: rel, start_line: start + 1, end_line: end + 1, text: lines.slice(start, end + 1).join("\n") });
    start = end + 1;
  }
  return chunks;
}

function listMemoryFiles(ws, extra = []) {
  const out = [];
  for (const name of ["MEMORY.md", "USER.md"]) if (fs.existsSync(path.join(ws, name))) out.push(name);
  const memDir = path.join(ws, "memory");
  if (fs.existsSync(memDir)) {
    for (const f of fs.readdirSync(memDir).sort()) if (f.endsWith(".md")) out.push(`memory/${f}`);
  }
  for (const e of extra) out.push(e);
  return out;
}

const methods = {
  ping: () => ({ ok: true, version: "fake" }),
  save(p) {
    if (typeof p.text !== "string" || !p.text.trim()) throw rpcErr(-32602, "text must be a non-empty string");
    const s = store(p.agent);
    for (const r of s.records.values()) {
      if (!r.path && r.text === p.text) return { id: r.id, deduplicated: true };
    }
    const id = nextId++;
    s.records.set(id, {
      id,
      text: p.text,
      source: p.source ?? "conversation",
      session: p.session ?? null,
      tags: p.tags ?? [],
      created_at: new Date().toISOString(),
      ...(p.path ? { path: p.path, start_line: p.start_line, end_line: p.end_line } : {}),
    });
    persist(p.agent);
    return { id, deduplicated: false };
  },
  search(p) {
    if (typeof p.query !== "string") throw rpcErr(-32602, "query must be a string");
    const s = store(p.agent);
    const k = p.k ?? 6;
    const hits = [];
    for (const r of s.records.values()) {
      let sc = score(p.query, r.text);
      if (r.source === "user_correction") sc = Math.min(1, sc * 1.1);
      if (sc <= 0) continue;
      if (p.min_score !== undefined && sc < p.min_score) continue;
      if (Array.isArray(p.tags) && !p.tags.every((t) => (r.tags ?? []).includes(t))) continue;
      hits.push({ ...publicRecord(r), score: sc, keyword_score: sc });
    }
    hits.sort((a, b) => b.score - a.score || a.id - b.id);
    return { results: hits.slice(0, k), mode: p.mode === "keyword" ? "keyword" : "hybrid", model: "fake-embedder" };
  },
  get(p) {
    const s = store(p.agent);
    if (p.id !== undefined) {
      const r = s.records.get(p.id);
      if (!r) throw rpcErr(-32002, `no record ${p.id}`);
      return { record: publicRecord(r) };
    }
    throw rpcErr(-32602, "get needs id (the fake does not read files)");
  },
  forget(p) {
    const s = store(p.agent);
    if (p.id !== undefined) {
      if (!s.records.has(p.id)) return { forgotten: [] };
      s.records.delete(p.id);
      persist(p.agent);
      return { forgotten: [p.id] };
    }
    throw rpcErr(-32602, "forget needs id");
  },
  status(p) {
    const s = store(p.agent);
    return {
      backend: "clawhdf5",
      records: s.records.size,
      file_bytes: 1234,
      schema_version: 1,
      store_path: path.join(storeDir ?? "/fake", `${p.agent ?? "main"}.h5`),
      ...(s.workspace ? { workspace: s.workspace } : {}),
      files: s.files.size,
      chunks: [...s.records.values()].filter((r) => r.path).length,
      embedding: { available: true, model: "fake-embedder" },
      vector: true,
      fts: true,
      unindexed_rows: 0,
      log_writes: 3,
      log_entries: 5,
      index_folds: 0,
    };
  },
  sync(p) {
    const s = store(p.agent);
    if (typeof p.workspace !== "string") throw rpcErr(-32602, "workspace is required");
    s.workspace = p.workspace;
    let filesIndexed = 0;
    let unchanged = 0;
    let added = 0;
    let removed = 0;
    for (const rel of listMemoryFiles(p.workspace, p.extra_paths ?? [])) {
      const abs = path.resolve(p.workspace, rel);
      const text = fs.readFileSync(abs, "utf8");
      if (!p.force && s.files.get(rel) === text) {
        unchanged += 1;
        continue;
      }
      for (const [id, r] of s.records) {
        if (r.path === rel) {
          s.records.delete(id);
          removed += 1;
        }
      }
      for (const c of chunkFile(rel, text)) {
        const id = nextId++;
        s.records.set(id, { id, source: "document", session: null, created_at: new Date().toISOString(), ...c });
        added += 1;
      }
      s.files.set(rel, text);
      filesIndexed += 1;
    }
    persist(p.agent);
    return { files_indexed: filesIndexed, files_unchanged: unchanged, chunks_added: added, chunks_removed: removed };
  },
};

let exiting = false;
function reply(obj) {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  if (!line.trim()) return;
  if (logFile) fs.appendFileSync(logFile, `${line}\n`);
  let req;
  try {
    req = JSON.parse(line);
  } catch {
    reply({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } });
    return;
  }
  const { id, method, params } = req;
  if (method === env.FAKE_SERVE_EXIT_ON) {
    const once = env.FAKE_SERVE_EXIT_ONCE;
    if (!once || !fs.existsSync(once)) {
      if (once) fs.writeFileSync(once, "crashed\n");
      process.stderr.write(`fake serve: crashing on ${method}\n`);
      process.exit(3);
    }
  }
  if (method === env.FAKE_SERVE_HANG) return;
  if (method === "shutdown") {
    exiting = true;
    reply({ jsonrpc: "2.0", id, result: { ok: true } });
    setImmediate(() => process.exit(0));
    return;
  }
  const run = () => {
    const fn = methods[method];
    if (!fn) {
      reply({ jsonrpc: "2.0", id, error: { code: -32601, message: `unknown method ${method}` } });
      return;
    }
    try {
      reply({ jsonrpc: "2.0", id, result: fn(params ?? {}) });
    } catch (err) {
      reply({ jsonrpc: "2.0", id, error: err.rpc ?? { code: -32000, message: err.message } });
    }
  };
  const delay = Number((method === "sync" ? env.FAKE_SERVE_DELAY_SYNC_MS : undefined) ?? env.FAKE_SERVE_DELAY_MS ?? 0);
  if (delay > 0) setTimeout(run, delay);
  else run();
});
rl.on("close", () => {
  if (!exiting) process.exit(0);
});
