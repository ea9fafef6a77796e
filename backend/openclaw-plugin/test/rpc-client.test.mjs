import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { RpcClient, RpcError } from "../lib/rpc-client.js";
import { fakeSpawn, readLog, tempDir } from "./helpers.mjs";

function client(env = {}, opts = {}) {
  return new RpcClient({ command: "clawhdf5", args: ["serve", "--dir", tempDir()], timeoutMs: 10000, spawn: fakeSpawn(env), ...opts });
}

test("calls are answered and matched by id, also when pipelined", async () => {
  const c = client();
  try {
    const pong = await c.call("ping");
    assert.equal(pong.ok, true);
    const saved = await Promise.all(["a one", "b two", "c three"].map((text) => c.call("save", { text })));
    assert.deepEqual(
      saved.map((s) => s.deduplicated),
      [false, false, false],
    );
    assert.equal(new Set(saved.map((s) => s.id)).size, 3);
    const res = await c.call("search", { query: "two" });
    assert.equal(res.results[0].text, "b two");
  } finally {
    await c.close();
  }
});

test("server errors become RpcError with the JSON-RPC code", async () => {
  const c = client();
  try {
    await assert.rejects(c.call("get", { id: 999 }), (err) => err instanceof RpcError && err.code === -32002 && err.kind === "server");
    await assert.rejects(c.call("nope"), (err) => err.code === -32601 && /unknown method/.test(err.message));
  } finally {
    await c.close();
  }
});

test("a hung call times out with a clear error, and a wedged process is replaced", async () => {
  const c = client({ FAKE_SERVE_HANG: "search" }, { timeoutMs: 300 });
  try {
    await c.call("ping", {}, { timeoutMs: 10000 });
    const firstPid = c.pid;
    const t0 = Date.now();
    await assert.rejects(c.call("search", { query: "x" }), (err) => err.kind === "timeout" && /did not answer within 300 ms/.test(err.message));
    assert.ok(Date.now() - t0 < 2000, "timeout must fire promptly");
    await assert.rejects(c.call("search", { query: "x" }), (err) => err.kind === "timeout");
    // two timeouts in a row: the process was killed; the next call starts a new one
    await new Promise((r) => setTimeout(r, 500));
    const pong = await c.call("ping", {}, { timeoutMs: 3000 });
    assert.equal(pong.ok, true);
    assert.notEqual(c.pid, firstPid);
  } finally {
    await c.close();
  }
});

test("a crash fails the call in flight with the exit reason; the next call restarts the server", async () => {
  const dir = tempDir();
  const c = client({ FAKE_SERVE_EXIT_ON: "save", FAKE_SERVE_EXIT_ONCE: path.join(dir, "crashed") }, { backoffBaseMs: 100 });
  try {
    await c.call("ping", {}, { timeoutMs: 10000 });
    const firstPid = c.pid;
    await assert.rejects(
      c.call("save", { text: "boom" }),
      (err) => err.kind === "unavailable" && /stopped/.test(err.message) && /exit code 3/.test(err.message) && /crashing on save/.test(err.message),
    );
    const saved = await c.call("save", { text: "after restart" });
    assert.equal(saved.deduplicated, false);
    assert.notEqual(c.pid, firstPid);
    assert.equal(c.starts, 2);
  } finally {
    await c.close();
  }
});

test("a server that keeps crashing backs off instead of respawning in a loop", async () => {
  const c = client({ FAKE_SERVE_EXIT_ON: "ping" }, { backoffBaseMs: 5000, timeoutMs: 1000 });
  try {
    await assert.rejects(c.call("ping", {}, { timeoutMs: 10000 }), (err) => err.kind === "unavailable");
    // the restart delay (5 s) is longer than the call's time budget: fail fast, no new process
    const t0 = Date.now();
    await assert.rejects(c.call("ping"), (err) => err.kind === "unavailable" && /restarting/.test(err.message));
    assert.ok(Date.now() - t0 < 500);
    assert.equal(c.starts, 1);
  } finally {
    await c.close();
  }
});

test("a missing binary gives an error naming it", async () => {
  const c = new RpcClient({ command: "/nonexistent/clawhdf5", args: ["serve"], timeoutMs: 2000 });
  try {
    await assert.rejects(c.call("ping"), (err) => err.kind === "unavailable" && /binary not found: \/nonexistent\/clawhdf5/.test(err.message));
  } finally {
    await c.close();
  }
});

test("non-JSON output lines are ignored", async () => {
  const c = client({ FAKE_SERVE_NOISE: "1" });
  try {
    assert.equal((await c.call("ping")).ok, true);
  } finally {
    await c.close();
  }
});

test("abort signals end a call early", async () => {
  const c = client({ FAKE_SERVE_HANG: "search" });
  try {
    const ac = new AbortController();
    const p = c.call("search", { query: "q" }, { signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    await assert.rejects(p, (err) => err.kind === "aborted");
  } finally {
    await c.close();
  }
});

test("close() sends shutdown and the process exits", async () => {
  const dir = tempDir();
  const log = path.join(dir, "log.jsonl");
  const c = client({ FAKE_SERVE_LOG: log });
  await c.call("ping");
  const child = c.child;
  await c.close();
  assert.ok(child.exitCode === 0 || child.signalCode !== null);
  assert.ok(readLog(log).some((l) => l.method === "shutdown"));
  await assert.rejects(c.call("ping"), /closed/);
});

test("a process that has not answered yet is not killed for timeouts (it may still be starting)", async () => {
  const c = client({ FAKE_SERVE_HANG: "search" }, { timeoutMs: 200 });
  try {
    await assert.rejects(c.call("search", { query: "a" }), (err) => err.kind === "timeout");
    const pid = c.pid;
    await assert.rejects(c.call("search", { query: "b" }), (err) => err.kind === "timeout");
    assert.equal(c.running, true);
    assert.equal(c.pid, pid);
    assert.equal(c.starts, 1);
  } finally {
    await c.close();
  }
});
