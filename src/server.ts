/**
 * Start and stop one gateway: Bun.serve in front of the Elysia app, a body-size guard that
 * answers with the spec's envelope, and graceful shutdown (stop accepting, let in-flight
 * requests and streams finish up to server.shutdown_timeout_ms, then close the database).
 */
import type { Server } from "bun";
import { loadConfig, type Config } from "./core/config";
import { createContext, createApp, closeContext, type ContextOptions } from "./app";
import { ApiError, errorResponse } from "./core/errors";
import { withBodyLimit } from "./core/http";
import type { AppContext } from "./context";
import { nativeRoutes } from "./gateway/routes";

export interface RunningServer {
  url: string;
  port: number;
  ctx: AppContext;
  server: Server<unknown>;
  /** graceful: waits for in-flight requests up to the configured deadline */
  stop(): Promise<void>;
}

export async function startServer(config: Config = loadConfig(), opts: ContextOptions = {}): Promise<RunningServer> {
  const ctx = await createContext(config, opts);
  const app = createApp(ctx);
  const maxBody = config.server.max_body_bytes;
  const handle = app.fetch;
  let inFlight = 0;
  const serve = async (request: Request) => {
    inFlight++;
    try {
      return await handle(request);
    } finally {
      inFlight--;
    }
  };
  const server = Bun.serve({
    hostname: config.server.host,
    port: config.server.port,
    // Bodies are checked by withBodyLimit (declared and chunked, reading at most the limit), so
    // Bun's own limit is lifted: it would answer a large declared Content-Length itself with a bare
    // 413 (no envelope, no X-Request-ID) before any handler runs.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    idleTimeout: 255,
    // proxy hot paths served without the Elysia hop (src/gateway/routes.ts); the rest below
    routes: nativeRoutes(ctx),
    fetch(incoming) {
      return withBodyLimit(incoming, maxBody, serve, ctx.requests);
    },
    error(e) {
      ctx.log.error("server error", { error: String(e) });
      return errorResponse(new ApiError("internal_error", "internal error"), "/");
    },
  });
  const port = server.port!;
  const host = config.server.host === "0.0.0.0" ? "127.0.0.1" : config.server.host;
  let stopping: Promise<void> | undefined;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    port,
    ctx,
    server,
    stop() {
      stopping ??= (async () => {
        const graceful = server.stop(false);
        const deadline = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), config.server.shutdown_timeout_ms).unref?.());
        if ((await Promise.race([graceful.then(() => "done" as const), deadline])) === "timeout") {
          ctx.log.warn("shutdown deadline reached; closing remaining connections", { inFlight });
          await server.stop(true);
        }
        await closeContext(ctx);
      })();
      return stopping;
    },
  };
}
