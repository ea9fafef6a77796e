// OpenClaw plugin entry: clawhdf5 takes the memory slot, registers the memory runtime, the memory tools and,
// when enabled, the auto-capture (agent_end) and auto-recall (before_prompt_build) hooks.
import { memoryDisabledFor, resolvePluginConfig } from "./lib/config.js";
import { createMemoryRuntime } from "./lib/runtime.js";
import { createMemoryTools } from "./lib/tools.js";
import { isTrivial, selectCaptures } from "./lib/capture.js";
import { buildRecallBlock, recallQuery } from "./lib/recall.js";

const TOOL_NAMES = ["memory_search", "memory_get", "memory_store", "memory_forget"];

/** Most remembered user messages per session for which a capture was already sent (dedupe across replays). */
const CAPTURED_KEEP = 256;

function hostStateDir(api) {
  try {
    const dir = api.runtime?.state?.resolveStateDir?.();
    return typeof dir === "string" && dir ? dir : undefined;
  } catch {
    return undefined;
  }
}

function hostWorkspaceResolver(api) {
  const fn = api.runtime?.agent?.resolveAgentWorkspaceDir;
  return typeof fn === "function" ? (cfg, agentId) => fn(cfg, agentId) : undefined;
}

/** Registers everything; `deps.spawn` replaces child_process.spawn in tests. */
export function registerClawhdf5(api, deps = {}) {
  const logger = api.logger ?? {};
  const settings = resolvePluginConfig(api.pluginConfig, { stateDir: hostStateDir(api) });
  const runtime = createMemoryRuntime({
    settings,
    logger,
    stateDir: hostStateDir(api),
    resolveWorkspace: hostWorkspaceResolver(api),
    spawn: deps.spawn,
  });

  api.registerMemoryCapability({
    runtime: {
      getMemorySearchManager: runtime.getMemorySearchManager,
      resolveMemoryBackendConfig: runtime.resolveMemoryBackendConfig,
      closeMemorySearchManager: runtime.closeMemorySearchManager,
      closeAllMemorySearchManagers: runtime.closeAllMemorySearchManagers,
    },
  });

  const cfgOf = (ctx) => ctx?.getRuntimeConfig?.() ?? ctx?.runtimeConfig ?? ctx?.config ?? api.config;
  const managerForCtx = (ctx) => async () => await runtime.acquire({ cfg: cfgOf(ctx), agentId: ctx?.agentId ?? "main" });
  const disabledFor = (ctx) => memoryDisabledFor(cfgOf(ctx), ctx?.agentId ?? "main");

  for (const name of TOOL_NAMES) {
    api.registerTool(
      (ctx) => {
        // An agent whose memory search is turned off gets no memory tools (as with memory-core).
        if (disabledFor(ctx)) return null;
        return createMemoryTools({ getManager: managerForCtx(ctx), ctx: ctx ?? {} }).find((t) => t.name === name);
      },
      { name },
    );
  }

  if (typeof api.on === "function" && settings.autoRecall) {
    api.on(
      "before_prompt_build",
      async (event, ctx) => {
        const query = recallQuery(event);
        if (!query || isTrivial(query) || disabledFor(ctx)) return undefined;
        try {
          const manager = await managerForCtx(ctx)();
          const hits = await manager.search(query, {
            maxResults: settings.recallMaxResults,
            minScore: settings.recallMinScore > 0 ? settings.recallMinScore : undefined,
            turn: true,
          });
          const block = buildRecallBlock(hits, { maxTokens: settings.recallMaxTokens, maxResults: settings.recallMaxResults });
          if (!block) return undefined;
          ctx?.hookInvocation?.assertActive?.();
          return { prependContext: block };
        } catch (err) {
          logger.warn?.(`clawhdf5: auto-recall skipped: ${err.message}`);
          return undefined;
        }
      },
      { timeoutMs: settings.timeoutMs + 1000 },
    );
  }

  if (typeof api.on === "function" && settings.autoCapture) {
    const captured = new Map(); // sessionKey -> Set of texts already saved
    api.on(
      "agent_end",
      async (event, ctx) => {
        if (!event?.success || disabledFor(ctx)) return;
        const picks = selectCaptures(event.messages, { maxChars: settings.captureMaxChars });
        if (picks.length === 0) return;
        const key = ctx?.sessionKey ?? ctx?.sessionId ?? "";
        let seen = captured.get(key);
        if (!seen) {
          seen = new Set();
          captured.set(key, seen);
          if (captured.size > CAPTURED_KEEP) captured.delete(captured.keys().next().value);
        }
        let manager;
        try {
          manager = await managerForCtx(ctx)();
        } catch (err) {
          logger.warn?.(`clawhdf5: auto-capture skipped: ${err.message}`);
          return;
        }
        for (const pick of picks) {
          if (seen.has(pick.text)) continue;
          try {
            await manager.save(pick.text, { source: pick.source, session: ctx?.sessionKey });
            seen.add(pick.text);
            if (seen.size > CAPTURED_KEEP) seen.delete(seen.values().next().value);
          } catch (err) {
            logger.warn?.(`clawhdf5: auto-capture failed: ${err.message}`);
          }
        }
      },
      { timeoutMs: settings.timeoutMs * 2 },
    );
  }

  if (typeof api.on === "function") {
    // Stop the server (it checkpoints every open store) when the gateway stops.
    api.on("gateway_stop", async () => {
      await runtime.closeAllMemorySearchManagers();
    });
  }

  return { settings, runtime };
}

export default {
  id: "clawhdf5",
  name: "clawhdf5 memory",
  description: "Agent memory in one HDF5 file per agent, served by a long-lived `clawhdf5 serve` process.",
  kind: "memory",
  register(api) {
    registerClawhdf5(api);
  },
};
