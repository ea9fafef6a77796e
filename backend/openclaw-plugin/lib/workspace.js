// Reads memory files from an agent workspace, refusing anything that resolves outside it.
import fs from "node:fs/promises";
import path from "node:path";

/** A path the caller may not read (outside the workspace, not a memory file, ...). */
export class PathRefusedError extends Error {
  constructor(message, code = "PATH_OUTSIDE_WORKSPACE") {
    super(message);
    this.name = "PathRefusedError";
    this.code = code;
  }
}

function isInside(root, candidate) {
  const rel = path.relative(root, candidate);
  return rel === "" ? false : !rel.startsWith("..") && !path.isAbsolute(rel);
}

/** Most lines one memory_get returns (as the server's `get`). */
export const MAX_READ_LINES = 2000;

/** Most bytes of text one memory_get returns: a window of a huge file, or a huge line, is cut here. */
export const MAX_READ_BYTES = 1024 * 1024;

/** Bytes read from the file at a time. */
const READ_CHUNK = 64 * 1024;

/**
 * Resolves `relPath` against `workspaceDir` (or one of `extraRoots`) and checks, after following symlinks,
 * that it stays inside. Returns {absPath, relPath} or throws PathRefusedError. A missing file resolves
 * (the caller reports not_found) as long as its would-be location is inside.
 */
export async function resolveWorkspacePath(workspaceDir, relPath, extraRoots = []) {
  if (typeof relPath !== "string" || relPath.trim() === "") {
    throw new PathRefusedError("path must be a non-empty string", "INVALID_PATH");
  }
  if (relPath.includes("\0")) throw new PathRefusedError("path contains a NUL byte", "INVALID_PATH");
  const root = path.resolve(workspaceDir);
  const roots = [root, ...extraRoots.map((r) => path.resolve(root, r))];
  const requested = path.resolve(root, relPath.trim());
  const owner = roots.find((r) => requested === r || isInside(r, requested));
  if (!owner) {
    throw new PathRefusedError(`path ${JSON.stringify(relPath)} is outside the memory workspace ${root}`);
  }
  // Follow symlinks: the real file must still be inside the real root.
  let realRoot;
  try {
    realRoot = await fs.realpath(owner);
  } catch {
    realRoot = owner;
  }
  let realTarget;
  try {
    realTarget = await fs.realpath(requested);
  } catch (err) {
    if (err.code !== "ENOENT" && err.code !== "ENOTDIR") throw err;
    // Missing: check its closest existing parent instead.
    let parent = path.dirname(requested);
    for (;;) {
      try {
        const realParent = await fs.realpath(parent);
        realTarget = path.join(realParent, path.relative(parent, requested));
        break;
      } catch {
        const up = path.dirname(parent);
        if (up === parent) {
          realTarget = requested;
          break;
        }
        parent = up;
      }
    }
  }
  if (realTarget !== realRoot && !isInside(realRoot, realTarget)) {
    throw new PathRefusedError(`path ${JSON.stringify(relPath)} leads outside the memory workspace ${root}`);
  }
  const rel = path.relative(root, requested).split(path.sep).join("/");
  return { absPath: requested, relPath: rel };
}

/**
 * Reads `lines` lines (at most MAX_READ_LINES) from line `from` (1-based) of a workspace file, or returns null
 * when it does not exist. Lines are split as the server splits them (at "\n", a trailing "\r" dropped) and
 * joined by "\n"; bytes that are not UTF-8 come back as U+FFFD. The file is streamed: the lines before the
 * window are scanned, not kept, and the window stops before a line that would take it past MAX_READ_BYTES (a
 * first line longer than that comes back cut to it). Returns {text, from, lines, truncated, nextFrom?}.
 */
export async function readWorkspaceLines(absPath, from, lines) {
  let stat;
  try {
    stat = await fs.stat(absPath);
  } catch (err) {
    if (err.code === "ENOENT" || err.code === "ENOTDIR") return null;
    throw err;
  }
  if (!stat.isFile()) throw new PathRefusedError(`${absPath} is not a regular file`, "NOT_A_FILE");
  const start = Math.max(1, Math.floor(Number(from) || 1));
  const want = Math.min(MAX_READ_LINES, Math.max(1, Math.floor(Number(lines) || 1)));
  const window = []; // the window's bytes: its lines, each after the first preceded by "\n"
  let size = 0;
  let picked = 0;
  let line = []; // bytes of the current line, inside the window, kept up to just past the room left
  let lineLen = 0;
  let lineNo = 1; // the line the next byte belongs to
  let midLine = false; // some of line `lineNo` was read
  let more = false; // the file goes on past the window (or its one line was cut)
  let full = false; // the window is complete: any byte still to come means `more`
  const room = () => MAX_READ_BYTES - size - (picked > 0 ? 1 : 0);
  const add = (bytes) => {
    if (picked > 0) window.push(Buffer.from("\n"));
    window.push(bytes);
    size += bytes.length + (picked > 0 ? 1 : 0);
    picked += 1;
  };
  // A line that does not fit: the first comes back cut to the limit, a later one is left for the next read.
  const overflow = (bytes) => {
    if (picked === 0) add(bytes.subarray(0, room()));
    more = true;
  };
  // The current line is complete: into the window, or the window ends before it.
  const endLine = () => {
    let bytes = Buffer.concat(line, lineLen);
    line = [];
    lineLen = 0;
    if (bytes.length > 0 && bytes[bytes.length - 1] === 13) bytes = bytes.subarray(0, bytes.length - 1);
    if (bytes.length > room()) overflow(bytes);
    else add(bytes);
    full = more || picked === want;
  };
  const fh = await fs.open(absPath, "r");
  try {
    const buf = Buffer.allocUnsafe(READ_CHUNK);
    reading: for (;;) {
      const { bytesRead } = await fh.read(buf, 0, READ_CHUNK, null);
      if (bytesRead === 0) break;
      let i = 0;
      while (i < bytesRead) {
        if (full) {
          more = true;
          break reading;
        }
        const nl = buf.indexOf(10, i);
        const end = nl === -1 || nl >= bytesRead ? bytesRead : nl;
        if (lineNo >= start) {
          const keep = Math.min(end - i, Math.max(0, room() + 2 - lineLen));
          if (keep > 0) {
            line.push(Buffer.from(buf.subarray(i, i + keep)));
            lineLen += keep;
          }
          if (lineLen > room() + 1) {
            // Too long even without a trailing "\r": the window ends here, whatever follows.
            overflow(Buffer.concat(line, lineLen));
            break reading;
          }
        }
        if (end === bytesRead) {
          midLine = midLine || end > i;
          i = end;
        } else {
          if (lineNo >= start) endLine();
          lineNo += 1;
          midLine = false;
          i = end + 1;
        }
      }
    }
    if (!full && !more && midLine && lineNo >= start) endLine();
  } finally {
    await fh.close();
  }
  const text = Buffer.concat(window, size).toString("utf8");
  return {
    text,
    from: start,
    lines: picked,
    truncated: more,
    ...(more ? { nextFrom: start + Math.max(1, picked) } : {}),
  };
}
