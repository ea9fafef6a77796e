// Shared pieces of the end-to-end tests against the real OpenClaw (run by scripts/test-openclaw.sh, which sets
// up a throwaway HOME/TMPDIR, the OpenClaw config and these variables).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set; run these tests through scripts/test-openclaw.sh`);
  return v;
}

/** The installed `openclaw` package folder (node_modules/openclaw). */
export const OC_DIR = need("OC_DIR");
export const WORKSPACE = need("E2E_WORKSPACE");
export const STORE_DIR = need("E2E_STORE");

const ocRequire = createRequire(`${OC_DIR}/package.json`);

/** Imports an `openclaw/...` subpath from the OpenClaw install under test. */
export async function importOpenClaw(subpath) {
  return await import(ocRequire.resolve(subpath));
}

/** The OpenClaw CLI entry script. */
export const OPENCLAW_MJS = path.join(OC_DIR, "openclaw.mjs");

/** Whether a process is still alive. */
export function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Pids of running processes whose command line mentions `needle` (used to find clawhdf5 servers). */
export function pidsMentioning(needle) {
  const out = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ");
      if (cmd.includes(needle) && cmd.includes("serve")) out.push(Number(entry));
    } catch {
      // process ended while listing
    }
  }
  return out.filter((p) => p !== process.pid);
}

/** Polls `fn` until it returns a truthy value or `ms` pass; returns the last value. */
export async function waitFor(fn, ms, stepMs = 100) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  return last;
}

/** Facts the tests store through memory_store, with a query that must find each. */
export const FACTS = [
  { text: "Project Kraken deploys to production every Thursday at 14:00 UTC.", query: "When does Project Kraken deploy?" },
  { text: "Alice's sister Maria lives in Porto and works as an architect.", query: "Where does Alice's sister Maria live?" },
  { text: "The user prefers green tea over coffee in the morning.", query: "green tea or coffee preference" },
];
