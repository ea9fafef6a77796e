// OpenClaw's MemorySearchManager for one agent, backed by the shared `clawhdf5 serve` process.
import fs from "node:fs/promises";
import { parseSyntheticPath, sliceLines, syntheticPath, toSearchResult } from "./results.js";
import { PathRefusedError, readWorkspaceLines, resolveWorkspacePath } from "./workspace.js";

async function isDirectory(dir) {
  try {
    return (await fs.stat(dir)).isDirectory();
  } catch {
    return false;
  }
}

/** Default line window of readFile when `lines` is not given. */
export const DEFAULT_READ_LINES = 200;

/** Serves one agent's memory: search, read, status, sync. */
export class ClawMemoryManager {
  /**
   * @param {object} opts
   * @param {import("./rpc-client.js").RpcClient} opts.client
   * @param {string} opts.agentId OpenClaw agent id
   * @param {string} opts.storeAgent store name sent to the server
   * @param {string} opts.workspaceDir
   * @param {object} opts.settings resolved plugin config
   * @param {object} [opts.logger]
   */
  constructor({ client, agentId, storeAgent, workspaceDir, settings, logger }) {
    this.client = client;
    this.agentId = agentId;
    this.storeAgent = storeAgent;
    this.workspaceDir = workspaceDir;
    this.settings = settings;
    this.logger = logger ?? {};
    this.lastSyncAt = 0;
    this.syncInFlight = null;
    /** The running sync a search already waited for (later searches during it do not wait again). */
    this.syncWaitedOn = null;
    this.lastSyncError = undefined;
    this.lastStatus = null;
    this.lastModel = undefined;
    this.lastMode = undefined;
    this.embeddingProbe = null;
  }

  _params(extra) {
    return { agent: this.storeAgent, ...extra };
  }

  /** Fetches the server's status and caches it for the synchronous status(). */
  async refreshStatus() {
    const st = await this.client.call("status", this._params({}));
    this.lastStatus = st;
    return st;
  }

  /**
   * Starts a workspace sync when the last one is older than syncIntervalMs and waits for it at most half the
   * call timeout (so a note edited just before the question is found): a long first index keeps running in the
   * server while this search answers from what is there. Of the searches made while one sync runs, only the
   * first waits for it: the server answers searches from what is indexed so far while it syncs.
   */
  async _syncIfDue() {
    if (!this.settings.syncOnSearch) return;
    if (!this.syncInFlight && Date.now() - this.lastSyncAt < this.settings.syncIntervalMs) return;
    if (this.syncInFlight && this.syncWaitedOn === this.syncInFlight) return;
    const running = this.syncInFlight ?? this.sync({ reason: "search" });
    this.syncWaitedOn = this.syncInFlight;
    let timer;
    const budget = new Promise((resolve) => {
      timer = setTimeout(resolve, Math.max(50, Math.floor(this.settings.timeoutMs / 2)));
    });
    try {
      await Promise.race([
        running.catch((err) => {
          // Search still answers from what is indexed; status() reports the failure as lastSyncError.
          this.logger.warn?.(`clawhdf5: sync before search failed: ${err.message}`);
        }),
        budget,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** memory search → [{path, startLine, endLine, score, snippet, source, citation, ...}] */
  async search(query, opts = {}) {
    const q = typeof query === "string" ? query.trim() : "";
    if (!q) return [];
    if (Array.isArray(opts.sources) && opts.sources.length > 0 && !opts.sources.includes("memory")) {
      return []; // clawhdf5 does not index session transcripts
    }
    await this._syncIfDue();
    const params = this._params({
      query: q,
      k: Math.max(1, Math.min(100, Math.floor(opts.maxResults ?? 6))),
      mode: opts.lexicalOnly ? "keyword" : this.settings.searchMode,
    });
    if (typeof opts.minScore === "number" && Number.isFinite(opts.minScore)) params.min_score = opts.minScore;
    if (Array.isArray(opts.tags)) {
      const tags = opts.tags.filter((t) => typeof t === "string" && t.trim()).map((t) => t.trim());
      if (tags.length > 0) params.tags = tags;
    }
    // A user's turn for automatic recall: the server's decision gate may skip it (no search, no results).
    if (opts.turn === true) params.turn = true;
    const res = await this.client.call("search", params, { signal: opts.signal });
    this.lastMode = res?.mode;
    if (res?.model) this.lastModel = res.model;
    const results = Array.isArray(res?.results) ? res.results : [];
    return results.map((r) => toSearchResult(r, { citations: opts.citations !== false }));
  }

  /** readFile({relPath, from, lines}) → {status:"ok", text, path, ...} | {status:"not_found", text:"", path} */
  async readFile({ relPath, from, lines } = {}) {
    const id = parseSyntheticPath(relPath);
    if (id !== null) {
      try {
        const res = await this.client.call("get", this._params({ id }));
        const rec = res?.record ?? res;
        return { status: "ok", path: syntheticPath(id), ...sliceLines(rec?.text ?? "", from, lines, DEFAULT_READ_LINES) };
      } catch (err) {
        if (err.code === -32002) return { status: "not_found", text: "", path: syntheticPath(id) };
        throw err;
      }
    }
    const { absPath, relPath: rel } = await resolveWorkspacePath(this.workspaceDir, relPath, this.settings.extraPaths);
    if (!/\.(md|markdown)$/i.test(absPath)) {
      throw new PathRefusedError(`path ${JSON.stringify(relPath)} is not a Markdown memory file`, "NOT_A_MEMORY_FILE");
    }
    const window = await readWorkspaceLines(absPath, from, lines ?? DEFAULT_READ_LINES);
    if (window === null) return { status: "not_found", text: "", path: rel };
    return { status: "ok", path: rel, ...window };
  }

  /** Synchronous snapshot in OpenClaw's MemoryProviderStatus shape (from the last status/sync call). */
  status() {
    const st = this.lastStatus ?? {};
    const emb = st.embedding ?? {};
    const vectorOn = this.settings.embeddingEnabled && emb.available !== false;
    const model = emb.model ?? this.lastModel;
    return {
      backend: "builtin",
      provider: "clawhdf5",
      ...(model ? { model } : {}),
      files: typeof st.files === "number" ? st.files : undefined,
      chunks: typeof st.chunks === "number" ? st.chunks : typeof st.records === "number" ? st.records : undefined,
      dirty: this.lastSyncAt === 0 && this.settings.syncOnSearch ? true : false,
      ...(this.lastSyncError ? { lastSyncError: this.lastSyncError } : {}),
      workspaceDir: this.workspaceDir,
      ...(st.store_path ? { dbPath: st.store_path } : {}),
      sources: ["memory"],
      fts: { enabled: true, available: st.fts !== false },
      vector: {
        enabled: vectorOn,
        available: Boolean(st.vector) && emb.available !== false,
        semanticAvailable: emb.available === true,
        ...(emb.error ? { loadError: emb.error } : {}),
      },
      custom: {
        searchMode: vectorOn ? "hybrid" : "fts-only",
        clawhdf5: {
          agent: this.storeAgent,
          records: st.records,
          fileBytes: st.file_bytes,
          schemaVersion: st.schema_version,
          // Rows searched exactly until the background fold places them in the vector graph, and how the
          // store's durable log writes went since it opened (each write carries every save waiting).
          unindexedRows: st.unindexed_rows,
          logWrites: st.log_writes,
          logEntries: st.log_entries,
          indexFolds: st.index_folds,
          mode: this.lastMode ?? this.settings.searchMode,
          lastSyncAt: this.lastSyncAt || undefined,
          statusFetched: this.lastStatus !== null,
          serverPid: this.client.pid,
        },
      },
    };
  }

  /** Indexes the agent's workspace (MEMORY.md, USER.md, memory/*.md, extra paths); only changed files. */
  async sync(params = {}) {
    if (!this.syncInFlight) {
      this.syncInFlight = this._runSync(params).finally(() => {
        this.syncInFlight = null;
      });
    }
    return await this.syncInFlight;
  }

  async _runSync(params) {
    try {
      if (!(await isDirectory(this.workspaceDir))) {
        // No workspace yet: nothing to index (stored memories are still searchable).
        this.lastSyncAt = Date.now();
        this.lastSyncError = undefined;
        return { files_indexed: 0, files_unchanged: 0, chunks_added: 0, chunks_removed: 0 };
      }
      const res = await this.client.call(
        "sync",
        this._params({
          workspace: this.workspaceDir,
          ...(this.settings.extraPaths.length ? { extra_paths: this.settings.extraPaths } : {}),
          ...(params.force ? { force: true } : {}),
        }),
        { timeoutMs: this.settings.syncTimeoutMs, signal: params.signal },
      );
      this.lastSyncAt = Date.now();
      this.lastSyncError = undefined;
      params.progress?.({ completed: 1, total: 1, label: "clawhdf5 sync" });
      await this.refreshStatus().catch(() => {});
      return res;
    } catch (err) {
      this.lastSyncError = err.message;
      throw err;
    }
  }

  /** Saves one memory; resolves {id, deduplicated}. */
  async save(text, { source = "conversation", session, tags, eventTime } = {}) {
    const params = this._params({ text, source });
    if (session) params.session = session;
    if (Array.isArray(tags) && tags.length) params.tags = tags;
    if (eventTime !== undefined) params.event_time = eventTime;
    return await this.client.call("save", params);
  }

  /** Removes memories by id; resolves {forgotten: [ids]}. */
  async forget(id) {
    return await this.client.call("forget", this._params({ id }));
  }

  /** Fetches one record by id (null when it does not exist). */
  async getRecord(id) {
    try {
      const res = await this.client.call("get", this._params({ id }));
      return res?.record ?? null;
    } catch (err) {
      if (err.code === -32002) return null;
      throw err;
    }
  }

  async probeEmbeddingAvailability() {
    try {
      const st = await this.refreshStatus();
      const emb = st?.embedding ?? {};
      const ok = this.settings.embeddingEnabled ? emb.available === true : false;
      this.embeddingProbe = {
        ok,
        ...(ok
          ? {}
          : { error: this.settings.embeddingEnabled ? (emb.error ?? "embedding model unavailable") : "embeddings disabled in plugin config" }),
        checked: true,
        checkedAtMs: Date.now(),
      };
    } catch (err) {
      this.embeddingProbe = { ok: false, error: err.message, checked: true, checkedAtMs: Date.now() };
    }
    return this.embeddingProbe;
  }

  getCachedEmbeddingAvailability() {
    return this.embeddingProbe;
  }

  async probeVectorAvailability() {
    try {
      const st = await this.refreshStatus();
      return Boolean(st?.vector) && this.settings.embeddingEnabled;
    } catch {
      return false;
    }
  }

  /**
   * OpenClaw closes a manager after each gateway `memory.search`; the server process is shared by every agent
   * and outlives the handle, so closing a handle stops nothing. closeAllMemorySearchManagers stops the process.
   */
  async close() {}
}
