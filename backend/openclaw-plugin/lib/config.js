// Resolves the plugin's settings (plugins.entries.clawhdf5.config) into a complete, validated object.
import os from "node:os";
import path from "node:path";
import { createHash } from "node:crypto";

/** Upper bound for per-call timeouts: OpenClaw's memory tool deadline is 15 s at its shortest. */
export const MAX_CALL_TIMEOUT_MS = 14000;

const DEFAULTS = Object.freeze({
  timeoutMs: 8000,
  syncTimeoutMs: 120000,
  syncOnSearch: true,
  syncIntervalMs: 60000,
  autoCapture: false,
  captureMaxChars: 1000,
  autoRecall: false,
  recallMaxTokens: 400,
  recallMaxResults: 4,
  recallMinScore: 0,
});

const KNOWN_KEYS = new Set([
  "binaryPath",
  "storeDir",
  "workspace",
  "extraPaths",
  "embedding",
  "timeoutMs",
  "syncTimeoutMs",
  "syncOnSearch",
  "syncIntervalMs",
  "serveArgs",
  ...Object.keys(DEFAULTS),
]);

/** A setting that is present but unusable; the message names the key. */
export class ConfigError extends Error {
  constructor(message) {
    super(`clawhdf5 plugin config: ${message}`);
    this.name = "ConfigError";
  }
}

function expandHome(p, env) {
  if (p === "~") return env.HOME || os.homedir();
  if (p.startsWith("~/")) return path.join(env.HOME || os.homedir(), p.slice(2));
  return p;
}

function readInt(raw, key, min, max) {
  const v = raw[key];
  if (v === undefined) return DEFAULTS[key];
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw new ConfigError(`${key} must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
  }
  return v;
}

function readBool(raw, key) {
  const v = raw[key];
  if (v === undefined) return DEFAULTS[key];
  if (typeof v !== "boolean") throw new ConfigError(`${key} must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

function readString(raw, key) {
  const v = raw[key];
  if (v === undefined) return undefined;
  if (typeof v !== "string" || v.trim() === "") {
    throw new ConfigError(`${key} must be a non-empty string, got ${JSON.stringify(v)}`);
  }
  return v.trim();
}

function readStringArray(raw, key) {
  const v = raw[key];
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) {
    throw new ConfigError(`${key} must be an array of strings`);
  }
  return [...v];
}

/**
 * Validates `raw` (the plugin's config object, possibly undefined) and fills defaults.
 * `stateDir` is OpenClaw's state directory (default store location).
 */
export function resolvePluginConfig(raw, { env = process.env, stateDir } = {}) {
  const cfg = raw ?? {};
  if (typeof cfg !== "object" || Array.isArray(cfg)) throw new ConfigError("must be an object");
  for (const key of Object.keys(cfg)) {
    if (!KNOWN_KEYS.has(key)) throw new ConfigError(`unknown setting "${key}"`);
  }

  const binaryPath = readString(cfg, "binaryPath") ?? (env.CLAWHDF5_BIN?.trim() || "clawhdf5");
  const baseState = stateDir || path.join(env.HOME || os.homedir(), ".openclaw");
  const storeDir = path.resolve(expandHome(readString(cfg, "storeDir") ?? path.join(baseState, "clawhdf5"), env));
  const workspace = readString(cfg, "workspace");

  const embeddingRaw = cfg.embedding ?? {};
  if (typeof embeddingRaw !== "object" || Array.isArray(embeddingRaw)) {
    throw new ConfigError("embedding must be an object");
  }
  for (const key of Object.keys(embeddingRaw)) {
    if (key !== "enabled" && key !== "mode") throw new ConfigError(`unknown setting "embedding.${key}"`);
  }
  if (embeddingRaw.enabled !== undefined && typeof embeddingRaw.enabled !== "boolean") {
    throw new ConfigError("embedding.enabled must be true or false");
  }
  const modes = ["hybrid", "vector", "rrf"];
  if (embeddingRaw.mode !== undefined && !modes.includes(embeddingRaw.mode)) {
    throw new ConfigError(`embedding.mode must be one of ${modes.join(", ")}, got ${JSON.stringify(embeddingRaw.mode)}`);
  }
  const embeddingEnabled = embeddingRaw.enabled ?? true;
  const searchMode = embeddingEnabled ? (embeddingRaw.mode ?? "hybrid") : "keyword";

  const recallMinScore = cfg.recallMinScore ?? DEFAULTS.recallMinScore;
  if (typeof recallMinScore !== "number" || !Number.isFinite(recallMinScore) || recallMinScore < 0) {
    throw new ConfigError(`recallMinScore must be a number >= 0, got ${JSON.stringify(cfg.recallMinScore)}`);
  }

  return Object.freeze({
    binaryPath: expandHome(binaryPath, env),
    storeDir,
    workspace: workspace === undefined ? undefined : expandHome(workspace, env),
    extraPaths: readStringArray(cfg, "extraPaths").map((p) => expandHome(p, env)),
    searchMode,
    embeddingEnabled,
    timeoutMs: readInt(cfg, "timeoutMs", 100, MAX_CALL_TIMEOUT_MS),
    syncTimeoutMs: readInt(cfg, "syncTimeoutMs", 1000, 600000),
    syncOnSearch: readBool(cfg, "syncOnSearch"),
    syncIntervalMs: readInt(cfg, "syncIntervalMs", 0, Number.MAX_SAFE_INTEGER),
    serveArgs: readStringArray(cfg, "serveArgs"),
    autoCapture: readBool(cfg, "autoCapture"),
    captureMaxChars: readInt(cfg, "captureMaxChars", 20, 10000),
    autoRecall: readBool(cfg, "autoRecall"),
    recallMaxTokens: readInt(cfg, "recallMaxTokens", 16, 8000),
    recallMaxResults: readInt(cfg, "recallMaxResults", 1, 20),
    recallMinScore,
  });
}

const STORE_AGENT_RE = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Maps an OpenClaw agent id to the server's store name ([A-Za-z0-9_.-]{1,64}). Ids that already fit are kept;
 * others get a hash-derived name, so two different agents never share a store.
 */
export function storeAgentId(agentId) {
  const id = typeof agentId === "string" && agentId.trim() ? agentId.trim() : "main";
  if (STORE_AGENT_RE.test(id) && id !== "." && id !== "..") return id;
  const digest = createHash("sha256").update(id).digest("hex").slice(0, 24);
  return `agent-${digest}`;
}

/**
 * The workspace indexed for `agentId`: the plugin's `workspace` setting (with `{agentId}` replaced), else
 * OpenClaw's own resolution (`resolveWorkspace(cfg, agentId)` when the host provides it), else the default
 * layout (`agents.defaults.workspace`, `<state>/workspace`).
 */
export function resolveWorkspaceDir({ pluginConfig, cfg, agentId, resolveWorkspace, stateDir, env = process.env }) {
  if (pluginConfig.workspace) {
    return path.resolve(expandHome(pluginConfig.workspace.replaceAll("{agentId}", agentId), env));
  }
  if (typeof resolveWorkspace === "function" && cfg) {
    try {
      const dir = resolveWorkspace(cfg, agentId);
      if (typeof dir === "string" && dir) return path.resolve(dir);
    } catch {
      // fall through to the plain layout below
    }
  }
  const configured = agentEntry(cfg, agentId)?.workspace ?? cfg?.agents?.defaults?.workspace;
  if (typeof configured === "string" && configured.trim()) return path.resolve(expandHome(configured.trim(), env));
  const base = stateDir || path.join(env.HOME || os.homedir(), ".openclaw");
  return path.join(base, agentId === "main" ? "workspace" : `workspace-${agentId}`);
}

/** The config entry of `agentId` (`agents.entries.<id>`, or the legacy `agents.list`), if any. */
export function agentEntry(cfg, agentId) {
  const entries = cfg?.agents?.entries;
  if (entries && typeof entries === "object" && Object.hasOwn(entries, agentId)) return entries[agentId] ?? undefined;
  return Array.isArray(cfg?.agents?.list) ? cfg.agents.list.find((a) => a?.id === agentId) : undefined;
}

/**
 * Whether OpenClaw's config turns memory search off for `agentId` (`agents.entries.<id>.memory.search.enabled`,
 * else the top-level `memory.search.enabled`), as memory-core honours it.
 */
export function memoryDisabledFor(cfg, agentId) {
  const own = agentEntry(cfg, agentId)?.memory?.search?.enabled;
  if (typeof own === "boolean") return !own;
  return cfg?.memory?.search?.enabled === false;
}
