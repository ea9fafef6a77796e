// A JSON-RPC 2.0 client over the stdio of one long-lived `clawhdf5 serve` child process: spawned lazily,
// restarted with backoff when it dies, every call bounded by a timeout.
import { spawn as nodeSpawn } from "node:child_process";

/** A call failed: the server answered with an error object, timed out, or the process is unusable. */
export class RpcError extends Error {
  constructor(message, { code, data, method, kind } = {}) {
    super(message);
    this.name = "RpcError";
    /** JSON-RPC error code (server errors), or undefined for local failures. */
    this.code = code;
    this.data = data;
    this.method = method;
    /** "server" | "timeout" | "unavailable" | "aborted" */
    this.kind = kind ?? "server";
  }
}

const STDERR_KEEP = 20;
const MAX_LINE_BYTES = 64 * 1024 * 1024;

/** Manages one child process and the requests in flight to it. */
export class RpcClient {
  /**
   * @param {object} opts
   * @param {string} opts.command binary path
   * @param {string[]} opts.args arguments
   * @param {number} opts.timeoutMs default per-call timeout
   * @param {object} [opts.logger] {debug, info, warn, error}
   * @param {Function} [opts.spawn] child_process.spawn replacement (tests)
   * @param {object} [opts.env] environment of the child
   * @param {number} [opts.backoffBaseMs] first restart delay after a crash
   * @param {number} [opts.backoffMaxMs] longest restart delay
   */
  constructor(opts) {
    this.command = opts.command;
    this.args = opts.args ?? [];
    this.timeoutMs = opts.timeoutMs ?? 8000;
    this.logger = opts.logger ?? {};
    this.spawnImpl = opts.spawn ?? nodeSpawn;
    this.env = opts.env;
    this.backoffBaseMs = opts.backoffBaseMs ?? 250;
    this.backoffMaxMs = opts.backoffMaxMs ?? 30000;
    this.child = null;
    this.nextId = 1;
    this.pending = new Map();
    this.stdoutBuf = "";
    this.stderrTail = [];
    this.crashes = 0;
    this.restartAt = 0;
    this.lastExit = null;
    this.consecutiveTimeouts = 0;
    this.closed = false;
    this.starts = 0;
  }

  /** Whether a child process is currently running. */
  get running() {
    return this.child !== null;
  }

  /** Process id of the running child, if any. */
  get pid() {
    return this.child?.pid;
  }

  _log(level, msg) {
    const fn = this.logger?.[level];
    if (typeof fn === "function") {
      try {
        fn.call(this.logger, msg);
      } catch {
        // a broken logger must not break calls
      }
    }
  }

  _describeExit() {
    const e = this.lastExit;
    if (!e) return "";
    const how = e.error ? e.error : e.signal ? `signal ${e.signal}` : `exit code ${e.code}`;
    const tail = e.stderr ? `; last stderr: ${e.stderr}` : "";
    return `${how}${tail}`;
  }

  _start() {
    this.starts += 1;
    let child;
    try {
      child = this.spawnImpl(this.command, this.args, {
        stdio: ["pipe", "pipe", "pipe"],
        env: this.env ?? process.env,
        windowsHide: true,
      });
    } catch (err) {
      this._onExit(null, { error: `cannot start ${this.command}: ${err.message}` });
      return;
    }
    this.child = child;
    // Settles once the process has exited and its pipes are drained ("close"), i.e. after _onExit ran.
    child.closed = new Promise((resolve) => child.once("close", () => resolve()));
    this.stdoutBuf = "";
    this.stderrTail = [];
    const startedAt = Date.now();
    child.startedAt = startedAt;

    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => this._onStdout(child, chunk));
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      for (const line of String(chunk).split("\n")) {
        if (!line.trim()) continue;
        this.stderrTail.push(line.trim());
        if (this.stderrTail.length > STDERR_KEEP) this.stderrTail.shift();
        this._log("debug", `clawhdf5 serve: ${line.trim()}`);
      }
    });
    child.stdin.on("error", (err) => {
      this._log("debug", `clawhdf5 serve stdin: ${err.message}`);
    });
    child.on("error", (err) => {
      const msg =
        err.code === "ENOENT"
          ? `clawhdf5 binary not found: ${this.command} (set plugins.entries.clawhdf5.config.binaryPath or $CLAWHDF5_BIN)`
          : `cannot run ${this.command}: ${err.message}`;
      this._onExit(child, { error: msg });
    });
    // "close" (not "exit"): by then stderr is drained, so the exit reason carries its last lines.
    child.on("close", (code, signal) => this._onExit(child, { code, signal }));

    // The child must not keep a one-shot CLI process alive: pending calls hold their own timers, and EOF on
    // the child's stdin (when this process exits) makes the server checkpoint and stop.
    child.unref?.();
    child.stdin.unref?.();
    child.stdout.unref?.();
    child.stderr.unref?.();
    this._log("debug", `started ${this.command} ${this.args.join(" ")} (pid ${child.pid})`);
  }

  _onExit(child, info) {
    if (child !== null && child !== this.child) return; // a previous child, already handled
    const wasRunning = this.child;
    this.child = null;
    const uptime = wasRunning?.startedAt ? Date.now() - wasRunning.startedAt : 0;
    this.lastExit = { ...info, stderr: this.stderrTail.slice(-3).join(" | "), at: Date.now() };
    if (!this.closed) {
      // A child that ran fine for a while resets the crash count; one that keeps dying backs off.
      if (uptime > 30000) this.crashes = 0;
      this.crashes += 1;
      const delay = Math.min(this.backoffMaxMs, this.backoffBaseMs * 2 ** (this.crashes - 1));
      this.restartAt = Date.now() + delay;
      this._log("warn", `clawhdf5 serve stopped (${this._describeExit()}); restart allowed in ${delay} ms`);
    }
    const err = new RpcError(`clawhdf5 serve stopped while a call was in flight (${this._describeExit()})`, {
      kind: "unavailable",
    });
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      p.fail(err);
    }
  }

  _onStdout(child, chunk) {
    if (child !== this.child) return;
    this.stdoutBuf += chunk;
    if (this.stdoutBuf.length > MAX_LINE_BYTES) {
      this._log("error", "clawhdf5 serve wrote an over-long line; restarting it");
      this.stdoutBuf = "";
      this._kill(child);
      return;
    }
    let nl;
    while ((nl = this.stdoutBuf.indexOf("\n")) >= 0) {
      const line = this.stdoutBuf.slice(0, nl).trim();
      this.stdoutBuf = this.stdoutBuf.slice(nl + 1);
      if (line) this._onLine(line);
    }
  }

  _onLine(line) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      this._log("warn", `clawhdf5 serve wrote a non-JSON line: ${line.slice(0, 200)}`);
      return;
    }
    if (!msg || typeof msg !== "object" || !("id" in msg)) {
      this._log("debug", `clawhdf5 serve: message without id ignored`);
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) {
      this._log("debug", `clawhdf5 serve: response to unknown or expired id ${msg.id}`);
      return;
    }
    this.pending.delete(msg.id);
    this.consecutiveTimeouts = 0;
    if (this.child) this.child.answered = true;
    if (msg.error) {
      const e = msg.error;
      p.fail(
        new RpcError(`clawhdf5 ${p.method} failed: ${e.message ?? "unknown error"}`, {
          code: e.code,
          data: e.data,
          method: p.method,
          kind: e.code === -32001 ? "timeout" : "server",
        }),
      );
    } else {
      p.ok(msg.result);
    }
  }

  _kill(child) {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }

  async _waitForRestart(deadline) {
    const wait = this.restartAt - Date.now();
    if (wait <= 0) return;
    if (Date.now() + wait >= deadline) {
      throw new RpcError(
        `clawhdf5 serve is restarting after it stopped (${this._describeExit()}); next start in ${wait} ms`,
        { kind: "unavailable" },
      );
    }
    await new Promise((r) => setTimeout(r, wait));
  }

  /**
   * Sends `method` with `params`; resolves with the result or rejects with an RpcError.
   * @param {object} [opts] {timeoutMs, signal}
   */
  async call(method, params = {}, opts = {}) {
    if (this.closed) throw new RpcError("clawhdf5 client is closed", { kind: "unavailable", method });
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const deadline = Date.now() + timeoutMs;
    if (opts.signal?.aborted) throw new RpcError(`clawhdf5 ${method} aborted`, { kind: "aborted", method });
    if (!this.child) {
      await this._waitForRestart(deadline);
      if (this.closed) throw new RpcError("clawhdf5 client is closed", { kind: "unavailable", method });
      if (!this.child) this._start();
      if (!this.child) {
        throw new RpcError(`clawhdf5 serve is unavailable: ${this._describeExit()}`, { kind: "unavailable", method });
      }
    }
    const child = this.child;
    const id = this.nextId++;
    return await new Promise((resolve, reject) => {
      let timer;
      const onAbort = () => {
        if (!this.pending.has(id)) return;
        this.pending.delete(id);
        cleanup();
        reject(new RpcError(`clawhdf5 ${method} aborted`, { kind: "aborted", method }));
      };
      const cleanup = () => {
        clearTimeout(timer);
        opts.signal?.removeEventListener?.("abort", onAbort);
      };
      this.pending.set(id, {
        method,
        ok: (v) => {
          cleanup();
          resolve(v);
        },
        fail: (e) => {
          cleanup();
          reject(e);
        },
      });
      timer = setTimeout(
        () => {
          if (!this.pending.has(id)) return;
          this.pending.delete(id);
          cleanup();
          this.consecutiveTimeouts += 1;
          // Two timeouts in a row with nothing answered in between: the process is wedged; replace it. A process
          // that has not answered yet may still be starting (loading a model), so it gets a minute first.
          const settled = child.answered || Date.now() - child.startedAt > 60000;
          if (this.consecutiveTimeouts >= 2 && this.child === child && settled) {
            this._log("warn", "clawhdf5 serve stopped answering; killing it so the next call restarts it");
            this.consecutiveTimeouts = 0;
            this._kill(child);
          }
          reject(
            new RpcError(`clawhdf5 ${method} did not answer within ${timeoutMs} ms`, { kind: "timeout", method }),
          );
        },
        Math.max(1, deadline - Date.now()),
      );
      opts.signal?.addEventListener?.("abort", onAbort, { once: true });
      const line = `${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`;
      try {
        child.stdin.write(line);
      } catch (err) {
        this.pending.delete(id);
        cleanup();
        reject(new RpcError(`cannot write to clawhdf5 serve: ${err.message}`, { kind: "unavailable", method }));
      }
    });
  }

  /**
   * Stops the child: `shutdown` (the server checkpoints), then SIGTERM and SIGKILL if it lingers.
   * The client can no longer be used afterwards.
   */
  async close({ graceMs = 3000 } = {}) {
    this.closed = true;
    const child = this.child;
    if (!child) return;
    const waitExit = (ms) => {
      let timer;
      return Promise.race([
        child.closed.then(() => true),
        new Promise((r) => {
          timer = setTimeout(() => r(false), ms);
        }),
      ]).finally(() => clearTimeout(timer));
    };
    try {
      const id = this.nextId++;
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method: "shutdown", params: {} })}\n`);
      child.stdin.end();
    } catch {
      // stdin already closed; fall through to signals
    }
    if (await waitExit(graceMs)) return;
    try {
      child.kill("SIGTERM");
    } catch {
      // gone
    }
    if (await waitExit(1000)) return;
    this._kill(child);
    await waitExit(1000);
  }
}
