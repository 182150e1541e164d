/**
 * Start and stop one gateway: Bun.serve in front of the app's front door (native proxy routes
 * straight from Bun's routes table, everything else through the Elysia app), WebSocket upgrades,
 * and graceful shutdown (stop accepting, close WebSockets with 1001, let in-flight requests and
 * streams finish up to server.shutdown_timeout_ms, then close every domain and the database).
 */
import type { Server, ServerWebSocket } from "bun";
import { loadConfig, type Config } from "./config";
import { createApp, startApp, closeApp, type App, type AppOptions } from "./app";
import { ApiError, DOC1, errorResponse } from "./core/errors";
import { BEARER_SUBPROTOCOL, pathOf, subprotocolToken } from "./core/kernel";
import type { SocketData } from "./core/domain";
import { AUTH_PATH_PREFIX, PEER_ADDRESS_HEADER } from "./identity";

export interface RunningServer {
  url: string;
  port: number;
  ctx: App;
  server: Server<SocketData>;
  /** graceful: waits for in-flight requests up to the configured deadline */
  stop(): Promise<void>;
}

export async function startServer(config: Config = loadConfig(), opts: AppOptions = {}): Promise<RunningServer> {
  const app = createApp(config, opts);
  let inFlight = 0;
  const sockets = new Map(app.sockets.map((s) => [s.path, s]));
  // open WebSockets: at shutdown each is closed with 1001 (going away), so clients reconnect to
  // another instance at once instead of the server waiting out the deadline for them
  const open = new Set<ServerWebSocket<SocketData>>();
  const server: Server<SocketData> = Bun.serve<SocketData>({
    hostname: config.server.host,
    port: config.server.port,
    // Bodies are checked by the kernel (declared and chunked, reading at most the limit), so Bun's
    // own limit is lifted: it would answer a large declared Content-Length itself with a bare 413
    // (no envelope, no X-Request-ID) before any handler runs.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    idleTimeout: 255,
    // proxy hot paths served without the Elysia hop, behind the same front door
    routes: app.bunRoutes,
    async fetch(request, srv) {
      inFlight++;
      try {
        const socket = request.headers.get("upgrade")?.toLowerCase() === "websocket" ? sockets.get(pathOf(request.url)) : undefined;
        // the peer address, for identity's per-address sign-in limits (a client's own value is overwritten)
        if (pathOf(request.url).startsWith(AUTH_PATH_PREFIX)) request.headers.set(PEER_ADDRESS_HEADER, srv.requestIP(request)?.address ?? "");
        if (!socket) return await app.fetch(request);
        const admitted = await app.kernel.admit(request, undefined, { websocket: true });
        if ("response" in admitted) return admitted.response;
        let data: unknown;
        try {
          data = await socket.upgrade(admitted.request, admitted.state.principal!);
        } catch (e) {
          return app.kernel.errorFor(e, admitted.state.mount.envelope, pathOf(request.url));
        }
        // a token offered as a subprotocol was read at the front door: the answer names svc.bearer (never echoes the token)
        const headers: Record<string, string> = { "x-request-id": admitted.state.id };
        if (subprotocolToken(request) !== undefined) headers["sec-websocket-protocol"] = BEARER_SUBPROTOCOL;
        if (srv.upgrade(admitted.request, { data: { route: socket, data }, headers })) return undefined;
        return errorResponse(new ApiError("invalid_request_error", "WebSocket upgrade failed"), admitted.state.mount.envelope);
      } finally {
        inFlight--;
      }
    },
    websocket: {
      open: (ws) => {
        open.add(ws);
        ws.data.route.open?.(ws);
      },
      message: (ws, message) => ws.data.route.message?.(ws, message),
      close: (ws, code, reason) => {
        open.delete(ws);
        ws.data.route.close?.(ws, code, reason);
      },
    },
    error(e) {
      app.log.error("server error", { error: String(e) });
      return errorResponse(new ApiError("internal_error", "internal error"), DOC1);
    },
  });
  startApp(app);
  const port = server.port!;
  const host = config.server.host === "0.0.0.0" ? "127.0.0.1" : config.server.host;
  let stopping: Promise<void> | undefined;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    port,
    ctx: app,
    server,
    stop() {
      stopping ??= (async () => {
        const graceful = server.stop(false);
        for (const ws of open) ws.close(1001, "server shutting down");
        const deadline = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), config.server.shutdown_timeout_ms).unref?.());
        if ((await Promise.race([graceful.then(() => "done" as const), deadline])) === "timeout") {
          app.log.warn("shutdown deadline reached; closing remaining connections", { inFlight });
          await server.stop(true);
        }
        await closeApp(app);
      })();
      return stopping;
    },
  };
}
