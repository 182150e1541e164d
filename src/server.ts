/**
 * Start and stop one gateway: Bun.serve in front of the app's front door (native proxy routes
 * straight from Bun's routes table, everything else through the Elysia app), WebSocket upgrades,
 * and graceful shutdown (stop accepting, close WebSockets with 1001, let in-flight requests and
 * streams finish up to server.shutdown_timeout_ms, then close every domain and the database).
 *
 * Listen first (issue 27): the socket listens before the app's modules are loaded. Until the app
 * is built, GET /health is answered at once (liveness: the process serves HTTP) and every other
 * request waits, then is served by the app like any other; the app is loaded and built in steps
 * that give the event loop a turn between them, so that early answer takes milliseconds.
 * startServer resolves once the app serves (what tests and the CLI use).
 */
import type { Server, ServerWebSocket } from "bun";
import { loadConfig, type Config } from "./config";
import type { App, AppOptions } from "./app";
import type { SocketData } from "./core/domain";
import { ApiError, DOC1, errorResponse } from "./core/errors";
import { Logger } from "./core/log";

export interface RunningServer {
  url: string;
  port: number;
  ctx: App;
  server: Server<SocketData>;
  /** graceful: waits for in-flight requests up to the configured deadline */
  stop(): Promise<void>;
}

type Serve = (request: Request, srv: Server<SocketData>) => Promise<Response | undefined>;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HEALTH_BODY = '{"status":"ok"}';

/**
 * The answer to GET (or HEAD) /health while the app is built: the ops route's body and headers
 * (X-Request-ID as the kernel's requestIdOf: a valid incoming UUID echoed, otherwise a new one).
 * Any other request: undefined (it waits for the app).
 */
export function earlyHealth(request: Request): Response | undefined {
  if (request.method !== "GET" && request.method !== "HEAD") return undefined;
  const url = request.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const path = start < 0 ? "/" : url.slice(start).replace(/[?#].*$/s, "");
  if (path !== "/health") return undefined;
  const incoming = request.headers.get("x-request-id");
  return new Response(request.method === "HEAD" ? null : HEALTH_BODY, {
    headers: { "content-type": "application/json;charset=utf-8", "x-request-id": incoming && UUID_RE.test(incoming) ? incoming : crypto.randomUUID() },
  });
}

/** One turn of the event loop: requests that arrived meanwhile are read and answered. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The app's modules in parts (each import evaluates its part of the bundle at once; the heavy
 * domains are parts of their own), a turn of the event loop between them.
 */
export const APP_MODULES: Array<[name: string, load: () => Promise<unknown>]> = [
  ["core/kernel", () => import("./core/kernel")],
  ["core/auth", () => import("./core/auth")],
  ["embedding", () => import("./embedding")],
  ["cache", () => import("./cache")],
  ["gateway", () => import("./gateway")],
  ["keys", () => import("./keys")],
  ["ratelimit", () => import("./ratelimit")],
  ["prompts", () => import("./prompts")],
  ["identity", () => import("./identity")],
  ["mcp", () => import("./mcp")],
  ["memory", () => import("./memory")],
  ["ops", () => import("./ops")],
  ["ui", () => import("./ui")],
];

/** Seams for tests: the app is built only once `buildAfter` settles (the socket listens before). */
export interface StartSeams {
  buildAfter?: Promise<unknown>;
}

export async function startServer(config: Config = loadConfig(), opts: AppOptions = {}, seams: StartSeams = {}): Promise<RunningServer> {
  let log = opts.logger ?? new Logger("info");
  let inFlight = 0;
  // open WebSockets: at shutdown each is closed with 1001 (going away), so clients reconnect to
  // another instance at once instead of the server waiting out the deadline for them
  const open = new Set<ServerWebSocket<SocketData>>();
  const websocket: Bun.WebSocketHandler<SocketData> = {
    open: (ws) => {
      open.add(ws);
      ws.data.route.open?.(ws);
    },
    message: (ws, message) => ws.data.route.message?.(ws, message),
    close: (ws, code, reason) => {
      open.delete(ws);
      ws.data.route.close?.(ws, code, reason);
    },
  };
  const error = (e: Error) => {
    log.error("server error", { error: String(e) });
    return errorResponse(new ApiError("internal_error", "internal error"), DOC1);
  };
  // requests other than /health that arrive while the app is built wait for it here
  const built = Promise.withResolvers<Serve>();
  built.promise.catch(() => {});
  const server: Server<SocketData> = Bun.serve<SocketData>({
    hostname: config.server.host,
    port: config.server.port,
    // Bodies are checked by the kernel (declared and chunked, reading at most the limit), so Bun's
    // own limit is lifted: it would answer a large declared Content-Length itself with a bare 413
    // (no envelope, no X-Request-ID) before any handler runs.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    idleTimeout: 255,
    fetch: (request, srv) => earlyHealth(request) ?? built.promise.then((serve) => serve(request, srv)),
    websocket,
    error,
  });

  let app: App;
  let closeApp: (app: App) => Promise<void>;
  try {
    await seams.buildAfter;
    for (const [, load] of APP_MODULES) {
      await load();
      await turn();
    }
    const [appModule, { pathOf, BEARER_SUBPROTOCOL, subprotocolToken }, { AUTH_PATH_PREFIX, PEER_ADDRESS_HEADER }] = await Promise.all([
      import("./app"),
      import("./core/kernel"),
      import("./identity"),
    ]);
    closeApp = appModule.closeApp;
    app = await appModule.createAppAsync(config, opts);
    log = app.log;
    const sockets = new Map(app.sockets.map((s) => [s.path, s]));
    const serve: Serve = async (request, srv) => {
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
    };
    // from here the app serves: proxy hot paths from Bun's routes table (without the Elysia hop,
    // behind the same front door), everything else through its fetch; the requests that waited go
    // through the same handler
    server.reload({ routes: app.bunRoutes, fetch: serve, websocket, error });
    built.resolve(serve);
    appModule.startApp(app);
  } catch (e) {
    built.reject(e);
    await server.stop(true);
    throw e;
  }
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
