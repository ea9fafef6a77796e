// Maps clawhdf5 records (the server's search/get results) to OpenClaw's MemorySearchResult shape.

/** Prefix of the synthetic path given to a memory that did not come from a workspace file. */
export const SYNTHETIC_PREFIX = "clawhdf5/";

/** Longest snippet handed to OpenClaw (memory-core trims its snippets to the same order of size). */
export const SNIPPET_MAX_CHARS = 700;

const SYNTHETIC_RE = /^clawhdf5\/(\d{1,20})$/;

/** The synthetic path of record `id`. */
export function syntheticPath(id) {
  return `${SYNTHETIC_PREFIX}${id}`;
}

/** The record id named by a synthetic path, or null when `p` is not one. */
export function parseSyntheticPath(p) {
  const m = SYNTHETIC_RE.exec(String(p ?? "").trim());
  if (!m) return null;
  const id = Number(m[1]);
  return Number.isSafeInteger(id) ? id : null;
}

/** `path#Lstart-Lend` (or `#Lstart` for one line), as memory-core writes citations. */
export function formatCitation(p, startLine, endLine) {
  return startLine === endLine ? `${p}#L${startLine}` : `${p}#L${startLine}-L${endLine}`;
}

function countLines(text) {
  if (!text) return 1;
  return text.split("\n").length;
}

function trimSnippet(text) {
  const t = String(text ?? "").trim();
  if (t.length <= SNIPPET_MAX_CHARS) return t;
  return `${t.slice(0, SNIPPET_MAX_CHARS - 1).trimEnd()}…`;
}

/** OpenClaw provenance class of a record, from its clawhdf5 source. */
export function originClassOf(source) {
  switch (source) {
    case "user_correction":
    case "conversation":
    case "document":
      return "owner";
    case "tool":
    case "agent":
      return "agent";
    case "system":
      return "system";
    default:
      return "untrusted";
  }
}

function observedAtMs(record) {
  for (const v of [record.event_time, record.created_at]) {
    if (typeof v === "number" && Number.isFinite(v)) return v;
    if (typeof v === "string") {
      const t = Date.parse(v);
      if (Number.isFinite(t)) return t;
    }
  }
  return undefined;
}

/** One server search hit → a MemorySearchResult (plus the record id, kept for forgetting). */
export function toSearchResult(record, { citations = true } = {}) {
  const hasPath = typeof record.path === "string" && record.path.length > 0;
  const p = hasPath ? record.path : syntheticPath(record.id);
  const text = String(record.text ?? "");
  const startLine = Number.isInteger(record.start_line) && record.start_line >= 1 ? record.start_line : 1;
  const endLine =
    Number.isInteger(record.end_line) && record.end_line >= startLine
      ? record.end_line
      : startLine + countLines(text) - 1;
  const out = {
    path: p,
    startLine,
    endLine,
    score: typeof record.score === "number" ? record.score : 0,
    snippet: trimSnippet(text),
    source: "memory",
  };
  if (typeof record.vector_score === "number") out.vectorScore = record.vector_score;
  if (typeof record.keyword_score === "number") out.textScore = record.keyword_score;
  if (citations) out.citation = formatCitation(p, startLine, endLine);
  const observedAt = observedAtMs(record);
  out.provenance = {
    originClass: originClassOf(record.source),
    sessionKind: "unknown",
    ...(observedAt !== undefined ? { observedAt } : { observedAt: 0 }),
  };
  if (record.id !== undefined) out.id = record.id;
  return out;
}

/** Slices `text` to the 1-based line window [from, from+lines) and reports truncation like memory-core. */
export function sliceLines(text, from, lines, defaultLines = 200) {
  const all = String(text).split("\n");
  const start = Math.max(1, from ?? 1);
  const count = Math.max(1, lines ?? defaultLines);
  const picked = all.slice(start - 1, start - 1 + count);
  const end = start - 1 + picked.length;
  const truncated = end < all.length;
  return {
    text: picked.join("\n"),
    from: start,
    lines: picked.length,
    truncated,
    ...(truncated ? { nextFrom: end + 1 } : {}),
  };
}
