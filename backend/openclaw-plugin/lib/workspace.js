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

/** Largest file memory_get will read. */
export const MAX_READ_BYTES = 8 * 1024 * 1024;

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

/** Reads a workspace file as UTF-8, or returns null when it does not exist. */
export async function readWorkspaceFile(absPath) {
  let stat;
  try {
    stat = await fs.stat(absPath);
  } catch (err) {
    if (err.code === "ENOENT" || err.code === "ENOTDIR") return null;
    throw err;
  }
  if (!stat.isFile()) throw new PathRefusedError(`${absPath} is not a regular file`, "NOT_A_FILE");
  if (stat.size > MAX_READ_BYTES) {
    throw new PathRefusedError(`${absPath} is larger than ${MAX_READ_BYTES} bytes`, "FILE_TOO_LARGE");
  }
  return await fs.readFile(absPath, "utf8");
}
