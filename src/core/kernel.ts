/**
 * The HTTP kernel every domain mounts its routes on. One front door serves every request, proxy
 * and admin alike, in this order:
 *
 *   request id -> header size -> AUTHENTICATION (the mount's policy) -> rate limit (the mount's
 *   group) -> path encoding -> body size -> the route (parse with bounds -> permission -> validation -> handler)
 *   -> X-Request-ID / X-RateLimit-* on the answer -> metrics and request log
 *
 * so a new domain cannot validate, parse or answer before the caller is authenticated. A domain
 * declares, where it mounts its routes (`kernel.mount({...})`), the path prefix, its error
 * envelope, its rate-limit group and who may call. Core knows no domain: the mount table is
 * filled by the domains at composition time.
 */
import { Elysia, type AnyElysia } from "elysia";
import { Memoirist } from "memoirist";
import { OptionalKind, type TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { Value } from "@sinclair/typebox/value";
import { StorageUnavailableError } from "../storage/errors";
import { ApiError, DOC1, errorResponse, toApiError, type Envelope } from "./errors";
import { requirePermission, type Authenticator, type Permission, type Principal } from "./auth";
import { describeValueError, parseJsonBody, readUtf8Body, safeDecodeURIComponent } from "./validation";
import type { Logger } from "./log";
import { RequestObserver } from "./request-observer";
import { pathOf, requestIdOf, type Mount, type MountSpec, type RequestLimiter, type RequestState } from "./kernel-types";
export * from "./kernel-types";
export { RequestObserver, UNMATCHED } from "./request-observer";


export interface KernelOptions {
  auth: Authenticator;
  limiter: RequestLimiter;
  observer: RequestObserver;
  log: Logger;
  maxBodyBytes: number;
  /** total size of the request line's headers accepted (name + value bytes) */
  maxHeaderBytes: number;
}

/** Most request header fields (431 in the envelope above; Bun answers a bare 431 itself from ~200, no option). */
export const MAX_HEADER_FIELDS = 100;

type Next = (request: Request, state: RequestState) => Response | Promise<Response>;

/** A handler served straight from Bun.serve's routes table, behind the front door. */
export type NativeHandler = Next;
/** path (Bun routes syntax, `*` wildcards) -> method -> handler; the path is the route template for metrics */
export type NativeRoutes = Record<string, Partial<Record<"GET" | "POST" | "PUT" | "PATCH" | "DELETE", NativeHandler>>>;

type BunHandler = (request: Request) => Promise<Response>;

interface BodyCheck {
  /** the route's `perm`: checked before the body (403 before 400) */
  perm?: Permission;
  schema: TSchema;
  check: TypeCheck<TSchema>;
  optional: boolean;
  object: boolean;
}

const EMPTY_BODY = Symbol("empty body");
/** marks the transform of a route's `perm`, so the body check can find the permission to check first */
export const PERM = Symbol("perm");
const BODY_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export class Kernel {
  private mounts: Mount[] = [];
  /** the mounts as matchers (prefix + "/" built once), longest prefix first */
  private matchers: Array<{ mount: Mount; slash: string | undefined }> = [];
  /** path → mount, for the paths seen recently (most traffic repeats a few proxy paths) */
  private readonly mountCache = new Map<string, Mount>();
  private readonly states = new WeakMap<Request, RequestState>();
  private readonly bodyChecks = new Map<string, BodyCheck>();
  /** route templates of every route (labels for answers given before a route ran) */
  private readonly labels = new Memoirist<string>();
  /** native routes by method and template */
  private readonly native = new Memoirist<{ template: string; handler: NativeHandler }>();
  private app?: AnyElysia;
  private readonly templates: Array<{ method: string; path: string }> = [];
  private readonly fallback: Mount = { prefix: "", envelope: DOC1, auth: "bearer", exact: false };

  constructor(private readonly o: KernelOptions) {}

  get observer() {
    return this.o.observer;
  }

  // ------------------------------------------------------------------ mount table

  /** Register a mount; the longest matching prefix decides a request's policy. */
  register(spec: MountSpec): Mount {
    // "/" as a prefix covers every path (stored as ""); as an exact mount it is the root path itself
    const prefix = spec.prefix === "/" ? (spec.exact ? "/" : "") : spec.prefix.replace(/\/$/, "");
    const mount: Mount = { prefix, envelope: spec.envelope, auth: spec.auth ?? "bearer", rateGroup: spec.rateGroup, exact: spec.exact === true };
    if (this.mounts.some((m) => m.prefix === mount.prefix && m.exact === mount.exact)) throw new Error(`two mounts declare the prefix ${mount.prefix}`);
    this.mounts = [...this.mounts, mount].sort((a, b) => b.prefix.length - a.prefix.length);
    this.matchers = this.mounts.map((m) => ({ mount: m, slash: m.exact ? undefined : m.prefix + "/" }));
    this.mountCache.clear();
    return mount;
  }

  mountOf(path: string): Mount {
    const cached = this.mountCache.get(path);
    if (cached) return cached;
    let found = this.fallback;
    for (const { mount, slash } of this.matchers)
      if (path === mount.prefix || (slash !== undefined && path.startsWith(slash))) {
        found = mount;
        break;
      }
    if (path.length <= 256) {
      if (this.mountCache.size >= 4096) this.mountCache.clear();
      this.mountCache.set(path, found);
    }
    return found;
  }

  envelopeOf(path: string): Envelope {
    return this.mountOf(path).envelope;
  }

  /**
   * Mount a domain's routes: registers the policy and returns the Elysia instance to define the
   * routes on (paths relative to the prefix; "" is the prefix itself). Handlers get `principal`;
   * `perm: "ViewMetrics"` on a route requires that permission before the body is validated.
   */
  mount(spec: MountSpec) {
    this.register(spec);
    return this.routes(spec.prefix);
  }

  /** The Elysia instance for routes under a prefix some mount already covers (no new policy). */
  routes(prefix: string) {
    const principalOf = (request: Request) => this.principalOf(request);
    return new Elysia({ prefix: prefix.replace(/\/$/, "") })
      .macro({
        perm(permission: Permission) {
          const transform = ({ request }: { request: Request }) => {
            const p = principalOf(request);
            if (!p) throw new ApiError("authentication_error", "missing credentials");
            requirePermission(p, permission);
          };
          return { transform: Object.assign(transform, { [PERM]: permission }) };
        },
      })
      .derive({ as: "local" }, ({ request }) => ({ principal: principalOf(request) as Principal }));
  }

  principalOf(request: Request): Principal | undefined {
    return this.states.get(request)?.principal;
  }

  stateOf(request: Request): RequestState | undefined {
    return this.states.get(request);
  }

  // ------------------------------------------------------------------ front door

  /**
   * Serve one request through the front door. `route` is the route template when the caller
   * already knows it (the proxies' native routes table); Elysia routes report theirs.
   */
  async serve(request: Request, next: Next, route?: string): Promise<Response> {
    const startedAt = performance.now();
    const admitted = await this.admit(request, route);
    let response: Response;
    const state = admitted.state;
    if ("response" in admitted) response = admitted.response;
    else {
      request = admitted.request;
      try {
        response = await next(request, state);
      } catch (e) {
        response = this.errorFor(e, state.mount.envelope, pathOf(request.url));
      }
    }
    if (response !== state.stamped) response = withHeaders(response, state.headers);
    state.route ??= this.labelOf(request.method, pathOf(request.url));
    this.o.observer.finish(request, state, response.status, startedAt);
    return response;
  }

  /**
   * The front door's checks without serving: authentication, rate limit, path encoding, header
   * and body size. Either the (possibly re-buffered) request and its state, or the error answer.
   * WebSocket upgrades use it directly.
   */
  async admit(request: Request, route?: string, opts?: { websocket?: boolean }): Promise<{ request: Request; state: RequestState } | { response: Response; state: RequestState }> {
    const path = pathOf(request.url);
    const mount = this.mountOf(path);
    const state: RequestState = { id: requestIdOf(request), mount, route, headers: {}, logged: this.o.observer.logging };
    state.headers["x-request-id"] = state.id;
    try {
      this.checkHeaderSize(request);
      if (mount.auth !== "public") {
        // the URL object only where it is read (a domain's own credential; ?key= is parsed lazily)
        // a browser cannot set Authorization on a WebSocket: an upgrade may carry the bearer token as a subprotocol instead
        const offered = opts?.websocket && typeof mount.auth !== "function" && !request.headers.has("authorization") ? subprotocolToken(request) : undefined;
        state.principal =
          typeof mount.auth === "function"
            ? await mount.auth(request, new URL(request.url))
            : offered !== undefined
              ? await this.o.auth.authenticateCredential(offered)
              : await this.o.auth.authenticate(request, mount.auth);
        // the in-process limiter answers synchronously; the shared one (Redis) is awaited
        const limited = this.o.limiter.enforce(state.principal, groupOf(mount, request.method), state.headers);
        if (limited) await limited;
      }
      if (path.includes("%") && safeDecodeURIComponent(path) === null) throw new ApiError("not_found", "no route for a path with malformed percent-encoding");
      request = await this.withinBodyLimit(request);
      // a native route (route given) is handed its state; Elysia's routes and upgrades find theirs by request
      if (route === undefined) this.states.set(request, state);
      return { request, state };
    } catch (e) {
      return { response: this.errorFor(e, mount.envelope, path), state };
    }
  }

  /** Serve any request: a native route (the proxies' hot paths) or the Elysia app. */
  fetch = (request: Request): Promise<Response> => {
    const hit = this.native.find(request.method, pathOf(request.url));
    if (hit) return this.serve(request, hit.store.handler, hit.store.template);
    return this.serve(request, (r) => this.app!.handle(r));
  };

  /** Native routes as a Bun.serve `routes` table, each handler behind the front door. */
  bunRoutes(routes: NativeRoutes): Record<string, Record<string, BunHandler>> {
    const out: Record<string, Record<string, BunHandler>> = {};
    for (const [path, methods] of Object.entries(routes)) {
      out[path] = {};
      for (const [method, handler] of Object.entries(methods)) if (handler) out[path]![method] = (r) => this.serve(r, handler, path);
    }
    return out;
  }

  /** Every route: method and template (native routes and the Elysia app's). */
  routeList(): Array<{ method: string; path: string }> {
    return [...this.templates];
  }

  private labelOf(method: string, path: string): string | undefined {
    return this.labels.find(method, path)?.store;
  }

  /** An error as the answer in an envelope (unknown errors logged, answered as 500 without internals). */
  errorFor(e: unknown, envelope: Envelope, path: string): Response {
    // the database being away is an outage, not a bug: one warning line without a stack (503 + Retry-After)
    if (e instanceof StorageUnavailableError) this.o.log.warn("database unavailable", { path, error: e.message });
    else if (!(e instanceof ApiError)) this.o.log.error("unhandled error", { path, error: String((e as Error)?.stack ?? e) });
    return errorResponse(toApiError(e), envelope);
  }

  private checkHeaderSize(request: Request) {
    let size = 0;
    let fields = 0;
    request.headers.forEach((v, k) => {
      size += k.length + v.length + 4;
      fields++;
    });
    if (fields > MAX_HEADER_FIELDS) throw new ApiError("invalid_request_error", `request has ${fields} header fields; at most ${MAX_HEADER_FIELDS} are accepted`, undefined, undefined, 431);
    if (size > this.o.maxHeaderBytes)
      throw new ApiError("invalid_request_error", `request headers exceed ${this.o.maxHeaderBytes} bytes`, undefined, undefined, 431);
  }

  /**
   * A declared Content-Length above the limit is refused without reading; a body without one
   * (chunked) is read up to the limit and served as a buffered copy. Too large: 413.
   */
  private async withinBodyLimit(request: Request): Promise<Request> {
    const max = this.o.maxBodyBytes;
    const len = request.headers.get("content-length");
    if (len !== null) {
      if (Number(len) > max) throw tooLarge(max);
      return request;
    }
    if (!request.body) return request;
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > max) {
        void reader.cancel().catch(() => {});
        throw tooLarge(max);
      }
      chunks.push(value);
    }
    return new Request(request.url, { method: request.method, headers: request.headers, body: Buffer.concat(chunks), signal: request.signal });
  }

  // ------------------------------------------------------------------ Elysia integration

  /**
   * Global hooks of the Elysia app: bounded JSON parsing of every body, the route template for
   * metrics, the body check (before Elysia's own validation, which renders the whole rejected
   * value), and errors in the mount's envelope.
   */
  plugin() {
    const kernel = this;
    return new Elysia({ name: "svc-kernel-hooks" })
      .onParse({ as: "global" }, async ({ request }) => {
        if (!BODY_METHODS.has(request.method)) return;
        const value = parseJsonBody(await readUtf8Body(request), { wellFormed: true });
        return value === undefined ? EMPTY_BODY : value;
      })
      .onTransform({ as: "global" }, (c) => {
        const state = kernel.states.get(c.request);
        if (state) state.route = c.route;
        if ((c.body as unknown) === EMPTY_BODY) c.body = undefined as never;
        const check = kernel.bodyChecks.get(`${c.request.method} ${c.route}`);
        if (check?.perm) {
          const p = state?.principal;
          if (!p) throw new ApiError("authentication_error", "missing credentials");
          requirePermission(p, check.perm);
        }
        if (check) c.body = checkBody(check, c.body) as never;
      })
      .onError({ as: "global" }, ({ code, error, request }) => {
        const state = kernel.states.get(request);
        const path = pathOf(request.url);
        return kernel.errorFor(elysiaError(code, error, request), state?.mount.envelope ?? kernel.envelopeOf(path), path);
      });
  }

  /**
   * Take the composed app and the native routes (call once, after every domain is mounted):
   * compiles each route's body check (Elysia validates again afterwards: same schema, passes) and
   * learns every route template, for labels and for serving native routes through `fetch`.
   */
  install(app: AnyElysia, native: NativeRoutes) {
    this.app = app;
    for (const [path, methods] of Object.entries(native))
      for (const [method, handler] of Object.entries(methods)) {
        if (!handler) continue;
        this.native.add(method, path, { template: path, handler });
        this.labels.add(method, path, path, { ignoreError: true });
        this.templates.push({ method, path });
      }
    for (const r of app.routes as Array<{ method: string; path: string; hooks?: { body?: unknown; transform?: unknown } }>) {
      this.labels.add(r.method, r.path, r.path, { ignoreError: true });
      this.templates.push({ method: r.method, path: r.path });
      const schema = r.hooks?.body as TSchema | undefined;
      if (!schema || typeof schema !== "object" || !(Symbol.for("TypeBox.Kind") in schema)) continue;
      if ((schema as unknown as Record<symbol, unknown>)[Symbol.for("TypeBox.Kind")] === "Any") continue;
      const transforms = [r.hooks?.transform ?? []].flat() as Array<{ [PERM]?: Permission; fn?: { [PERM]?: Permission } }>;
      this.bodyChecks.set(`${r.method} ${r.path}`, {
        perm: transforms.map((f) => f[PERM] ?? f.fn?.[PERM]).find((p) => p !== undefined),
        schema,
        check: TypeCompiler.Compile(schema),
        optional: (schema as { [OptionalKind]?: string })[OptionalKind] === "Optional",
        object: (schema as { type?: string }).type === "object",
      });
    }
  }
}

/** The subprotocol a WebSocket client names to carry its bearer token (browsers cannot set Authorization on a WebSocket). */
export const BEARER_SUBPROTOCOL = "svc.bearer";

/**
 * The token of `Sec-WebSocket-Protocol: svc.bearer, <token>` (a JWT or API key is a valid
 * subprotocol token); undefined when the upgrade does not offer svc.bearer, "" when it offers it
 * without a token (refused as missing credentials).
 */
export function subprotocolToken(request: Request): string | undefined {
  const offered = request.headers.get("sec-websocket-protocol");
  if (!offered) return undefined;
  const list = offered.split(",").map((p) => p.trim());
  const i = list.indexOf(BEARER_SUBPROTOCOL);
  if (i < 0) return undefined;
  return list[i + 1] ?? "";
}

/** The rate-limit group a mount declares for a request method. */
export function groupOf(mount: Mount, method: string): string | undefined {
  const g = mount.rateGroup;
  if (g === undefined || typeof g === "string") return g;
  return method === "GET" || method === "HEAD" ? g.read : g.write;
}

const tooLarge = (max: number) => new ApiError("invalid_request_error", `request body exceeds ${max} bytes`, undefined, undefined, 413);

/** Put the front door's headers on an answer (a Response from fetch has immutable headers: copy it). */
function withHeaders(response: Response, headers: Record<string, string>): Response {
  try {
    for (const k in headers) if (!response.headers.has(k) || k === "x-request-id") response.headers.set(k, headers[k]!);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    for (const k in headers) copy.headers.set(k, headers[k]!);
    return copy;
  }
}

const describeKind = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "an array" : `a ${typeof v}`);

/** The route's body against its schema; the normalised body (defaults applied) or 400 naming the first wrong field. */
function checkBody(c: BodyCheck, body: unknown): unknown {
  if (body === undefined) {
    if (c.optional) return undefined;
    throw new ApiError("validation_error", "request body: expected a JSON object");
  }
  if (c.check.Check(body)) return body;
  if (c.object && (typeof body !== "object" || body === null || Array.isArray(body)))
    throw new ApiError("validation_error", `request body: expected a JSON object, got ${describeKind(body)}`);
  // what Elysia does before its own check: defaults filled in, undeclared properties dropped
  const normalised = Value.Clean(c.schema, Value.Default(c.schema, Value.Clone(body)));
  if (c.check.Check(normalised)) return normalised;
  throw new ApiError("validation_error", describeValueError(c.check.Errors(normalised).First(), "body"));
}

/** Elysia's own errors (query/params validation, parse, unknown route) as ApiErrors. */
function elysiaError(code: string | number, error: unknown, request: Request): unknown {
  if (error instanceof ApiError) return error;
  if (code === "VALIDATION") {
    const e = error as { type?: string; valueError?: { path: string; message: string; schema: TSchema; value?: unknown } };
    const where = e.type === "params" ? "path parameter" : e.type === "headers" ? "header" : e.type === "property" || e.type === "query" ? "query" : "body";
    const param = e.type === "property" ? queryParamOf(e.valueError?.value, request) : undefined;
    return new ApiError("validation_error", describeValueError(e.valueError, where, param));
  }
  if (code === "PARSE") {
    // the kernel's own parser throws ApiErrors (depth bound, ill-formed text); Elysia wraps them
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof ApiError ? cause : new ApiError("invalid_request_error", "malformed request body: expected valid JSON");
  }
  if (code === "NOT_FOUND") return new ApiError("not_found", `no route for ${request.method} ${pathOf(request.url)}`);
  return error;
}

/** Elysia reports a coerced query parameter without its name: find the parameter whose value failed. */
function queryParamOf(value: unknown, request: Request): string | undefined {
  const params = new URL(request.url).searchParams;
  for (const [k, v] of params) if (v === String(value)) return k;
  return undefined;
}
