// The memory runtime handed to api.registerMemoryCapability: one shared server process per gateway process,
// one manager per agent.
import { RpcClient } from "./rpc-client.js";
import { ClawMemoryManager } from "./manager.js";
import { memoryDisabledFor, resolveWorkspaceDir, storeAgentId } from "./config.js";

const CLIENTS_KEY = Symbol.for("clawhdf5.openclaw.clients");

/**
 * Process-wide table of server clients keyed by command line, so that a plugin registered several times in one
 * gateway (reloads, several registration modes) still talks to one `clawhdf5 serve` process per store.
 */
function clientTable() {
  if (!globalThis[CLIENTS_KEY]) globalThis[CLIENTS_KEY] = new Map();
  return globalThis[CLIENTS_KEY];
}

/**
 * The command line of the server for `settings`. The server bounds every request by `timeoutMs` except a
 * workspace sync, which gets its own, longer deadline (`syncTimeoutMs`): indexing a workspace can take far longer
 * than a search, and a search must still answer within OpenClaw's tool deadline.
 */
export function serveCommand(settings) {
  return {
    command: settings.binaryPath,
    args: [
      "serve",
      "--dir",
      settings.storeDir,
      "--deadline-ms",
      String(settings.timeoutMs),
      "--sync-deadline-ms",
      String(settings.syncTimeoutMs),
      ...settings.serveArgs,
    ],
  };
}

/** Returns the shared client for `settings`, creating (not yet spawning) it when needed. */
export function sharedClient(settings, { logger, spawn } = {}) {
  const { command, args } = serveCommand(settings);
  const key = JSON.stringify([command, args]);
  const table = clientTable();
  let client = table.get(key);
  if (!client || client.closed) {
    client = new RpcClient({ command, args, timeoutMs: settings.timeoutMs, logger, spawn });
    table.set(key, client);
  }
  return client;
}

/** Stops every server process this module started (gateway shutdown, tests). */
export async function closeAllClients() {
  const table = clientTable();
  const clients = [...table.values()];
  table.clear();
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
}

/** Builds the MemoryPluginRuntime object. */
export function createMemoryRuntime({ settings, logger, stateDir, resolveWorkspace, spawn }) {
  const managers = new Map();

  const managerFor = ({ cfg, agentId }) => {
    const id = typeof agentId === "string" && agentId.trim() ? agentId.trim() : "main";
    let m = managers.get(id);
    if (m && !m.client.closed) return m;
    const workspaceDir = resolveWorkspaceDir({ pluginConfig: settings, cfg, agentId: id, resolveWorkspace, stateDir });
    m = new ClawMemoryManager({
      client: sharedClient(settings, { logger, spawn }),
      agentId: id,
      storeAgent: storeAgentId(id),
      workspaceDir,
      settings,
      logger,
    });
    managers.set(id, m);
    return m;
  };

  /** The agent's manager, ready to use; throws the server's error (RpcError) when it cannot be reached. */
  const acquire = async ({ cfg, agentId }) => {
    const id = typeof agentId === "string" && agentId.trim() ? agentId.trim() : "main";
    if (memoryDisabledFor(cfg, id)) throw new Error(`memory search is disabled for agent "${id}" in the OpenClaw config`);
    const manager = managerFor({ cfg, agentId: id });
    // The first handle fetches status so that the synchronous status() has real numbers.
    if (manager.lastStatus === null) await manager.refreshStatus();
    return manager;
  };

  return {
    managerFor,
    acquire,
    async getMemorySearchManager({ cfg, agentId, purpose } = {}) {
      const started = Date.now();
      try {
        const manager = await acquire({ cfg, agentId });
        return {
          manager,
          debug: { backend: "builtin", purpose: purpose ?? "default", managerMs: Date.now() - started },
        };
      } catch (err) {
        return { manager: null, error: `clawhdf5 memory unavailable: ${err.message}` };
      }
    },
    resolveMemoryBackendConfig() {
      return { backend: "builtin" };
    },
    async closeMemorySearchManager({ agentId } = {}) {
      managers.delete(typeof agentId === "string" && agentId.trim() ? agentId.trim() : "main");
    },
    async closeAllMemorySearchManagers() {
      managers.clear();
      await closeAllClients();
    },
  };
}
