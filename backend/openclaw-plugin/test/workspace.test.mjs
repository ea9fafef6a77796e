import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { MAX_READ_BYTES, MAX_READ_LINES, readWorkspaceLines } from "../lib/workspace.js";
import { tempDir } from "./helpers.mjs";

/** The lines of `text` as Rust's `str::lines` (and the server's `get`) split them. */
function referenceLines(text) {
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines.map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
}

/** A deterministic generator (xorshift32). */
function rng(seed) {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x % n;
  };
}

test("windows match the server's line split across read-chunk boundaries, CRLF and empty lines", async () => {
  const dir = tempDir();
  const next = rng(20261207);
  for (let f = 0; f < 4; f++) {
    // ~200 KB: several 64 KiB reads, lines of 0 to 3,000 characters, some "\r\n", some ending without "\n".
    let text = "";
    while (text.length < 200_000) {
      const len = next(8) === 0 ? 0 : next(next(10) === 0 ? 3000 : 120);
      text += "é-x".repeat(Math.ceil(len / 3)).slice(0, len) + (next(5) === 0 ? "\r\n" : "\n");
    }
    if (f % 2 === 1) text = text.slice(0, -1) + "tail without newline";
    const file = path.join(dir, `f${f}.md`);
    fs.writeFileSync(file, text);
    const all = referenceLines(text);
    const windows = [
      [1, 1],
      [1, 5000],
      [2, 10],
      [all.length, 1],
      [all.length, 3],
      [all.length + 1, 5],
    ];
    for (let i = 0; i < 25; i++) windows.push([1 + next(all.length + 2), 1 + next(300)]);
    for (const [from, lines] of windows) {
      const w = await readWorkspaceLines(file, from, lines);
      const count = Math.min(lines, MAX_READ_LINES);
      const picked = all.slice(from - 1, from - 1 + count);
      const more = from - 1 + picked.length < all.length;
      assert.equal(w.text, picked.join("\n"), `file ${f} from ${from} lines ${lines}`);
      assert.equal(w.lines, picked.length);
      assert.equal(w.from, from);
      assert.equal(w.truncated, more, `file ${f} from ${from} lines ${lines}`);
      assert.equal(w.nextFrom, more ? from + Math.max(1, picked.length) : undefined);
    }
  }
});

test("a window stops at the byte limit, a huge line comes back cut, and huge files are read", async () => {
  const dir = tempDir();
  // Lines of 600,000 bytes: a second one would pass the limit.
  const wide = path.join(dir, "wide.md");
  const line = "w".repeat(600_000);
  fs.writeFileSync(wide, `${line}\n${line}\n${line}\n`);
  let w = await readWorkspaceLines(wide, 1, 3);
  assert.deepEqual([w.text.length, w.lines, w.truncated, w.nextFrom], [600_000, 1, true, 2]);
  w = await readWorkspaceLines(wide, w.nextFrom, 3);
  assert.deepEqual([w.text.length, w.lines, w.truncated, w.nextFrom], [600_000, 1, true, 3]);
  w = await readWorkspaceLines(wide, 3, 3);
  assert.deepEqual([w.text.length, w.lines, w.truncated], [600_000, 1, false]);

  // One 3 MiB line: its first MAX_READ_BYTES bytes, the rest of it skipped.
  const huge = path.join(dir, "huge.md");
  fs.writeFileSync(huge, `${"h".repeat(3 * 1024 * 1024)}\nafter\n`);
  w = await readWorkspaceLines(huge, 1, 10);
  assert.deepEqual([w.text.length, w.lines, w.truncated, w.nextFrom], [MAX_READ_BYTES, 1, true, 2]);
  w = await readWorkspaceLines(huge, 2, 10);
  assert.deepEqual([w.text, w.truncated], ["after", false]);

  // 20 MB of notes (memory_get once refused files over 8 MiB): the last lines and a 2,000-line cap.
  const big = path.join(dir, "big.md");
  const body = Array.from({ length: 400_000 }, (_, i) => `note ${i}: ${"z".repeat(40)}`).join("\n");
  fs.writeFileSync(big, body);
  w = await readWorkspaceLines(big, 399_999, 5);
  assert.equal(w.text, `note 399998: ${"z".repeat(40)}\nnote 399999: ${"z".repeat(40)}`);
  assert.equal(w.truncated, false);
  w = await readWorkspaceLines(big, 10, 1_000_000);
  assert.deepEqual([w.lines, w.truncated, w.nextFrom], [MAX_READ_LINES, true, 10 + MAX_READ_LINES]);

  // Bytes that are not UTF-8 come back replaced; a missing file is null; a directory is refused.
  const bad = path.join(dir, "bad.md");
  fs.writeFileSync(bad, Buffer.from([0x61, 0xff, 0x62, 0x0a, 0x63]));
  w = await readWorkspaceLines(bad, 1, 5);
  assert.equal(w.text, "a\ufffdb\nc");
  assert.equal(await readWorkspaceLines(path.join(dir, "missing.md"), 1, 5), null);
  await assert.rejects(readWorkspaceLines(dir, 1, 5), (err) => err.code === "NOT_A_FILE");
});
