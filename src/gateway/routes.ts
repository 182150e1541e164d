/**
 * The proxy surfaces, derived from the PROVIDERS record: a Bun.serve routes table (the hot path,
 * no framework hop; the root wraps each handler in the kernel's front door) and the OpenAPI
 * entries of every real path template they serve.
 */
import type { NativeHandler, NativeRoutes } from "../core/domain";
import { ApiError, DOC1, errorResponse } from "../core/errors";
import type { TSchema } from "@sinclair/typebox";
import { PROVIDERS, PROVIDER_NAMES } from "./providers";
import type { ProviderWire, ProxyRoute } from "./providers/types";
import type { ServeEndpoint } from "./serve";
import type { Examples } from "../core/openapi";

/** Path prefixes of the proxies (their mount: doc1 envelope, SDK credential places, the proxy rate-limit group). */
export const PROXY_PREFIXES = ["/v1", "/v1beta", "/v2"] as const;

type Claimed = ProxyRoute & { wire: ProviderWire };

const notFound = (message: string) => errorResponse(new ApiError("not_found", message), DOC1);

export function proxyRoutes(serve: ServeEndpoint): NativeRoutes {
  const byKey = new Map<string, Claimed[]>();
  for (const name of PROVIDER_NAMES) {
    const def = PROVIDERS[name];
    for (const r of def.routes) {
      const key = `${r.method} ${r.path}`;
      byKey.set(key, [...(byKey.get(key) ?? []), { ...r, wire: def.wire }]);
    }
  }
  const table: NativeRoutes = {};
  for (const [key, routes] of byKey) {
    const [method, path] = key.split(" ") as [ProxyRoute["method"], string];
    // a route that claims requests (e.g. by the SDK's credential) is asked first; the unclaiming one serves the rest
    const ordered = [...routes.filter((r) => r.claims), ...routes.filter((r) => !r.claims)];
    const only = ordered.length === 1 && !ordered[0]!.claims && ordered[0]!.endpoint ? ordered[0]! : undefined;
    // one route with one endpoint (e.g. POST /v1/chat/completions): nothing to choose, no URL object to build
    const handler: NativeHandler = only ? (request, state) => serve(request, state, only.endpoint!, only.wire) : (request, state) => {
      const url = new URL(request.url);
      const route = ordered.find((r) => !r.claims || r.claims(request, url));
      if (!route) return notFound(`no route for ${method} ${url.pathname}`);
      if (route.endpoint) return serve(request, state, route.endpoint, route.wire);
      const hit = route.dispatch!(request, url);
      if (!hit) return notFound(`no model action at ${url.pathname}`);
      return serve(request, state, hit.endpoint, route.wire, hit.params);
    };
    (table[path] ??= {})[method] = handler;
  }
  return table;
}

export interface ProxyDoc {
  method: string;
  path: string;
  summary: string;
  description?: string;
  body?: TSchema;
  stream?: "sse" | "ndjson" | "json-array";
  examples?: Examples;
}

/** Every documented proxy path template (for /openapi.json). */
export const proxyDocs = (): ProxyDoc[] =>
  PROVIDER_NAMES.flatMap((n) => PROVIDERS[n].routes.flatMap((r) => r.docs.map((d) => ({ method: r.method, ...d }))));
