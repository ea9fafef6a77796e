// The agent tools memory_search, memory_get, memory_store and memory_forget (memory-core-compatible schemas
// and payloads for the first two).
import { parseSyntheticPath, syntheticPath } from "./results.js";

/**
 * `{content:[{type:"text", text}], details}` with the payload pretty-printed, as OpenClaw's own tools reply.
 * Keys whose value is undefined are dropped, so that `details` and the text say the same.
 */
export function jsonResult(payload) {
  const clean = Object.fromEntries(Object.entries(payload).filter(([, v]) => v !== undefined));
  return { content: [{ type: "text", text: JSON.stringify(clean, null, 2) }], details: clean };
}

export const MEMORY_SEARCH_SCHEMA = Object.freeze({
  type: "object",
  properties: {
    query: { type: "string", description: "What to look for (natural language or keywords)." },
    maxResults: { type: "integer", minimum: 1, description: "Most results to return (default 6)." },
    minScore: {
      type: "number",
      description:
        "Drop results whose score is below this. Scores are absolute retrieval evidence in [0, 1] (higher is better), the same scale on every query; they are not probabilities of relevance and not comparable with other memory engines' scores.",
    },
    corpus: {
      type: "string",
      enum: ["memory", "wiki", "all", "sessions"],
      description: "memory (default) and all search clawhdf5; wiki and sessions are not indexed by clawhdf5.",
    },
    tags: {
      type: "array",
      items: { type: "string" },
      maxItems: 16,
      description: "Only memories saved with all of these tags (memory_store's tags).",
    },
  },
  required: ["query"],
  additionalProperties: false,
});

export const MEMORY_GET_SCHEMA = Object.freeze({
  type: "object",
  properties: {
    path: { type: "string", description: "A workspace memory file (e.g. memory/2026-05-01.md) or a clawhdf5/<id> path from memory_search." },
    from: { type: "integer", minimum: 1, description: "First line (1-based)." },
    lines: { type: "integer", minimum: 1, description: "How many lines (default 200)." },
    corpus: { type: "string", enum: ["memory", "wiki", "all"] },
  },
  required: ["path"],
  additionalProperties: false,
});

export const MEMORY_STORE_SCHEMA = Object.freeze({
  type: "object",
  properties: {
    text: { type: "string", minLength: 1, description: "The fact, preference, decision or correction to remember." },
    source: {
      type: "string",
      enum: ["conversation", "user_correction", "tool", "system"],
      description: "Where it came from (default conversation). user_correction outranks older facts.",
    },
    tags: { type: "array", items: { type: "string" }, maxItems: 16 },
  },
  required: ["text"],
  additionalProperties: false,
});

export const MEMORY_FORGET_SCHEMA = Object.freeze({
  type: "object",
  properties: {
    memoryId: { type: "integer", minimum: 0, description: "Id of the memory to delete (from memory_search)." },
    path: { type: "string", description: "A clawhdf5/<id> path from memory_search." },
    query: { type: "string", description: "Find the memory to delete; deletes only an unambiguous match." },
  },
  additionalProperties: false,
});

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;

/** Content words of a text: lowercase letter/digit runs of 3+ characters, and single CJK characters. */
function contentWords(text) {
  const out = new Set();
  for (const w of String(text).toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    if (CJK.test(w)) for (const ch of w) out.add(ch);
    else if (w.length >= 3) out.add(w);
  }
  return out;
}

/** Share of the query's content words found in `text` (0 when the query has none). */
export function queryCoverage(query, text) {
  const q = contentWords(query);
  if (q.size === 0) return 0;
  const t = contentWords(text);
  let hit = 0;
  for (const w of q) if (t.has(w)) hit += 1;
  return hit / q.size;
}

/** Longest text memory_store accepts. */
export const STORE_MAX_CHARS = 8000;

function unavailable(error, extra = {}) {
  const reason = String(error || "memory search unavailable");
  return {
    results: [],
    disabled: true,
    unavailable: true,
    error: reason,
    warning: extra.warning ?? "Memory search is unavailable: the clawhdf5 memory server did not answer.",
    action: extra.action ?? "Check plugins.entries.clawhdf5.config (binaryPath, storeDir) and the gateway log, then retry memory_search.",
    ...(extra.timedOut ? { timedOut: true } : {}),
  };
}

function citationsMode(cfg) {
  const mode = cfg?.memory?.citations;
  return mode === "on" || mode === "off" || mode === "auto" ? mode : "auto";
}

function isPlainObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function checkParams(params, schema) {
  if (!isPlainObject(params)) return "arguments must be an object";
  for (const key of Object.keys(params)) {
    if (!(key in schema.properties)) return `unknown argument "${key}"`;
  }
  for (const key of schema.required ?? []) {
    if (params[key] === undefined) return `missing required argument "${key}"`;
  }
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    const spec = schema.properties[key];
    if (spec.type === "string" && typeof value !== "string") return `${key} must be a string`;
    if (spec.type === "integer" && (!Number.isInteger(value) || value < (spec.minimum ?? -Infinity))) {
      return `${key} must be an integer${spec.minimum !== undefined ? ` >= ${spec.minimum}` : ""}`;
    }
    if (spec.type === "number" && (typeof value !== "number" || !Number.isFinite(value))) return `${key} must be a number`;
    if (spec.enum && !spec.enum.includes(value)) return `${key} must be one of ${spec.enum.join(", ")}`;
    if (spec.type === "array" && (!Array.isArray(value) || value.some((x) => typeof x !== "string"))) {
      return `${key} must be an array of strings`;
    }
  }
  return null;
}

/**
 * Builds the four tools for one agent. `getManager()` resolves the agent's ClawMemoryManager (or throws).
 * `ctx` is OpenClaw's tool context ({config, agentId, sessionKey, ...}).
 */
export function createMemoryTools({ getManager, ctx = {} }) {
  const memorySearch = {
    name: "memory_search",
    label: "Memory Search",
    description:
      "Mandatory recall step: search long-term memory (MEMORY.md, USER.md, memory/*.md and stored memories, in clawhdf5) before answering questions about prior work, decisions, dates, people, preferences, or todos. Results carry a citation (path#Lstart-Lend); use memory_get on the path for the exact lines. If the response has disabled=true, tell the user and include the warning/action.",
    parameters: MEMORY_SEARCH_SCHEMA,
    async execute(_toolCallId, params, signal) {
      const bad = checkParams(params, MEMORY_SEARCH_SCHEMA);
      if (bad) return jsonResult(unavailable(`invalid memory_search arguments: ${bad}`, { warning: "Invalid arguments.", action: "Fix the arguments and retry." }));
      const query = params.query.trim();
      if (!query) return jsonResult(unavailable("query must not be empty", { warning: "Empty query.", action: "Retry with a query." }));
      if (params.corpus === "sessions" || params.corpus === "wiki") {
        return jsonResult(
          unavailable(`corpus "${params.corpus}" is not indexed by clawhdf5`, {
            warning: `The ${params.corpus} corpus is not available with the clawhdf5 memory plugin.`,
            action: 'Retry memory_search with corpus "memory".',
          }),
        );
      }
      const mode = citationsMode(ctx.config ?? ctx.runtimeConfig);
      try {
        const manager = await getManager();
        const results = await manager.search(query, {
          maxResults: params.maxResults ?? 6,
          minScore: params.minScore,
          tags: params.tags,
          sessionKey: ctx.sessionKey,
          signal,
          citations: mode !== "off",
        });
        const status = manager.status();
        return jsonResult({
          results: results.map((r) => ({ ...r, corpus: "memory" })),
          provider: "clawhdf5",
          model: status.model,
          citations: mode,
          mode: manager.lastMode ?? status.custom?.clawhdf5?.mode,
        });
      } catch (err) {
        return jsonResult(
          unavailable(err.message, err.kind === "timeout"
            ? { timedOut: true, warning: "Memory search did not finish within its time limit.", action: "Retry memory_search after a short wait." }
            : {}),
        );
      }
    },
  };

  const memoryGet = {
    name: "memory_get",
    label: "Memory Get",
    description:
      "Safe exact excerpt read from the memory workspace (MEMORY.md, USER.md, memory/*.md) or of a stored memory (clawhdf5/<id> path from memory_search). Paths outside the workspace are refused. status=ok means the excerpt was read; status=not_found means it does not exist; status=error means the read failed.",
    parameters: MEMORY_GET_SCHEMA,
    async execute(_toolCallId, params) {
      const bad = checkParams(params, MEMORY_GET_SCHEMA);
      const relPath = isPlainObject(params) && typeof params.path === "string" ? params.path : "";
      if (bad) return jsonResult({ path: relPath, text: "", status: "error", code: "INVALID_ARGUMENTS", error: bad });
      if (params.corpus === "wiki") {
        return jsonResult({ path: relPath, text: "", status: "error", code: "CORPUS_UNAVAILABLE", error: 'corpus "wiki" is not available with clawhdf5' });
      }
      try {
        const manager = await getManager();
        return jsonResult(await manager.readFile({ relPath, from: params.from, lines: params.lines }));
      } catch (err) {
        return jsonResult({ path: relPath, text: "", status: "error", code: err.code && typeof err.code === "string" ? err.code : "MEMORY_READ_FAILED", error: err.message });
      }
    },
  };

  const memoryStore = {
    name: "memory_store",
    label: "Memory Store",
    description:
      "Save a fact, preference, decision or correction to long-term memory (clawhdf5). Use source user_correction when the user corrects an earlier fact. Exact duplicates are not stored twice.",
    parameters: MEMORY_STORE_SCHEMA,
    async execute(_toolCallId, params) {
      const bad = checkParams(params, MEMORY_STORE_SCHEMA);
      if (bad) return jsonResult({ stored: false, error: `invalid memory_store arguments: ${bad}` });
      const text = params.text.trim();
      if (!text) return jsonResult({ stored: false, error: "text must not be empty" });
      if (text.length > STORE_MAX_CHARS) {
        return jsonResult({ stored: false, error: `text is ${text.length} characters; the limit is ${STORE_MAX_CHARS}` });
      }
      try {
        const manager = await getManager();
        const res = await manager.save(text, {
          source: params.source ?? "conversation",
          tags: params.tags,
          session: ctx.sessionKey,
        });
        return jsonResult({ stored: true, id: res.id, path: syntheticPath(res.id), deduplicated: Boolean(res.deduplicated) });
      } catch (err) {
        return jsonResult({ stored: false, error: err.message });
      }
    },
  };

  const memoryForget = {
    name: "memory_forget",
    label: "Memory Forget",
    description:
      "Delete a stored memory: by memoryId (or its clawhdf5/<id> path) from memory_search, or by query (deletes only when exactly one memory clearly matches; otherwise lists candidates). Workspace file excerpts are forgotten by editing the file.",
    parameters: MEMORY_FORGET_SCHEMA,
    async execute(_toolCallId, params) {
      const bad = checkParams(params, MEMORY_FORGET_SCHEMA);
      if (bad) return jsonResult({ forgotten: [], error: `invalid memory_forget arguments: ${bad}` });
      let id = params.memoryId;
      if (id === undefined && params.path !== undefined) {
        id = parseSyntheticPath(params.path);
        if (id === null) {
          return jsonResult({ forgotten: [], error: `${JSON.stringify(params.path)} is a workspace file; edit the file to forget it` });
        }
      }
      try {
        const manager = await getManager();
        if (id !== undefined) {
          const rec = await manager.getRecord(id);
          if (!rec) return jsonResult({ forgotten: [], error: `no memory with id ${id}` });
          if (typeof rec.path === "string" && rec.path) {
            return jsonResult({ forgotten: [], error: `memory ${id} is an excerpt of ${rec.path}; edit that file to forget it` });
          }
          const res = await manager.forget(id);
          return jsonResult({ forgotten: res.forgotten ?? [id] });
        }
        const query = typeof params.query === "string" ? params.query.trim() : "";
        if (!query) return jsonResult({ forgotten: [], error: "give memoryId, path or query" });
        const hits = (await manager.search(query, { maxResults: 5 })).filter((h) => parseSyntheticPath(h.path) !== null);
        // Scores are relative to the query (the best hit always scores 1), so "clear" is judged on the text:
        // exactly one hit may contain most of the query's words.
        const strong = hits.filter((h) => queryCoverage(query, h.snippet) >= 0.6);
        const top = strong.length === 1 ? strong[0] : null;
        if (top === null) {
          return jsonResult({
            forgotten: [],
            candidates: hits.map((h) => ({ memoryId: h.id, path: h.path, score: h.score, snippet: h.snippet })),
            message: hits.length ? "No single clear match; call memory_forget again with one memoryId." : "No stored memory matches.",
          });
        }
        const res = await manager.forget(top.id);
        return jsonResult({ forgotten: res.forgotten ?? [top.id], snippet: top.snippet });
      } catch (err) {
        return jsonResult({ forgotten: [], error: err.message });
      }
    },
  };

  return [memorySearch, memoryGet, memoryStore, memoryForget];
}
