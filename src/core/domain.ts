/**
 * The one contract every domain implements. A domain lives in `src/<domain>/`, and its index.ts
 * exports `create(deps)` returning a Domain. `deps` is the domain's own narrow interface: what it
 * needs from core, storage and — declared by the caller, as interfaces in its own folder — from
 * other domains. Only the composition root (src/app.ts) knows every domain and wires them.
 *
 * Rules of the contract:
 *  - `migrations`: the domain's own tables (storage/migrations.ts), recorded as `<name>/<id>`;
 *    `create` must not touch the database (the root migrates after creating every domain);
 *  - `routes`: the domain's Elysia plugin, built on `kernel.mount({prefix, envelope, rateGroup, auth})`,
 *    so each route's error envelope, rate-limit group and authentication are declared where it is mounted;
 *  - `native`: hot paths served straight from Bun.serve's routes table (no framework hop); the root
 *    wraps each handler in the kernel's front door, so authentication and limits are the same;
 *  - `sockets`: WebSocket endpoints; the upgrade request passes the front door like any request;
 *  - `start`: background work (timers, loading a model), after migrations;
 *  - `close`: release resources on shutdown (domains close in reverse order of creation).
 */
import type { AnyElysia } from "elysia";
import type { ServerWebSocket } from "bun";
import type { Migration } from "../storage/migrations";
import type { Principal } from "./auth";
import type { NativeRoutes } from "./kernel";

export type { NativeHandler, NativeRoutes } from "./kernel";

/** What a socket carries: its route and what the route's upgrade returned. */
export interface SocketData {
  route: SocketRoute;
  data: unknown;
}

export interface SocketRoute {
  /** exact path, e.g. /api/v1/mcp/stream */
  path: string;
  /**
   * Decide the upgrade of an authenticated request: return the data to attach to the socket, or
   * throw ApiError (answered in the mount's envelope, no upgrade).
   */
  upgrade(request: Request, principal: Principal): unknown | Promise<unknown>;
  open?(ws: ServerWebSocket<SocketData>): void;
  message?(ws: ServerWebSocket<SocketData>, message: string | Buffer): void;
  close?(ws: ServerWebSocket<SocketData>, code: number, reason: string): void;
}

export interface Domain<Service = unknown> {
  /** the domain's folder name; namespaces its migrations */
  name: string;
  migrations: readonly Migration[];
  routes?: AnyElysia;
  native?: NativeRoutes;
  sockets?: SocketRoute[];
  service: Service;
  start?(): void;
  close?(): void | Promise<void>;
}
