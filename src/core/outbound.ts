/**
 * Outbound URL policy (SSRF): every call svc makes to a URL a tenant supplied — MCP servers,
 * Memory API connectors (GitHub, Jira, Confluence, Slack), SSO discovery and JWKS, OAuth token
 * endpoints — goes through here.
 *
 *  - only http(s);
 *  - literal addresses, and every address a name resolves to, must be public unicast: loopback,
 *    private, link-local (cloud metadata), CGNAT, unique-local, unspecified, multicast, reserved,
 *    documentation ranges and IPv4-mapped IPv6 forms of those are refused (ipaddr.js classifies;
 *    a mapped address is unwrapped first);
 *  - `check` (at registration) accepts a name that does not resolve yet — it is checked again at
 *    every connection;
 *  - `fetch` resolves the name again at every call and connects to the checked address (the URL's
 *    host is replaced by the address; Host and the TLS server name stay the name, so certificates
 *    are still verified against it), so DNS rebinding between check and connect cannot redirect it;
 *  - redirects are followed by hand (at most 5), each target checked the same way; a hop to another
 *    origin carries no credential (followRedirects: only CROSS_ORIGIN_HEADERS go on, no client
 *    certificate). credentialSafeFetch does the same for URLs the operator configured.
 * `allowPrivate` (configuration, off by default) admits private and loopback targets for
 * development and tests; `allowCidrs` admits named networks (an operator's internal MCP subnet).
 * Unspecified, multicast and broadcast addresses are never admitted.
 */
import { lookup } from "node:dns/promises";
import ipaddr from "ipaddr.js";
import { ApiError } from "./errors";

export interface OutboundSettings {
  /** admit loopback/private/link-local targets (development, tests); default false */
  allowPrivate: boolean;
  /** networks admitted although not public, e.g. ["10.20.0.0/16"] for internal MCP servers */
  allowCidrs?: string[];
  /** name -> addresses (default: the system resolver); tests inject one */
  resolve?: (hostname: string) => Promise<string[]>;
  /** most redirects followed (default 5) */
  maxRedirects?: number;
}

export type OutboundFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

const systemResolve = async (hostname: string) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

const NEVER = ["unspecified", "multicast", "broadcast"];

/** Why an address may not be a target, or undefined when it may (public unicast, or admitted). */
export function addressProblem(address: string, allowPrivate = false, allowed: Cidr[] = []): string | undefined {
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    ip = ipaddr.process(address); // unwraps IPv4-mapped IPv6
  } catch {
    return `"${address}" is not an IP address`;
  }
  // ::/96 other than :: and ::1: IPv4-compatible addresses (deprecated, RFC 4291 §2.5.5.1); some
  // stacks route ::127.0.0.1 to 127.0.0.1, and ipaddr.js calls the whole range unicast
  if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0) && !["unspecified", "loopback"].includes(ip.range()))
    return `${ip.toString()} is an IPv4-compatible IPv6 address (::/96)`;
  const range = ip.range();
  if (range === "unicast") return undefined;
  if (!NEVER.includes(range)) {
    if (allowPrivate && ["loopback", "private", "uniqueLocal", "linkLocal", "carrierGradeNat"].includes(range)) return undefined;
    if (allowed.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net as never, bits))) return undefined;
  }
  return `${ip.toString()} is a ${range} address`;
}

function parseCidrs(list: string[] = []): Cidr[] {
  return list.map((c) => {
    try {
      return ipaddr.parseCIDR(c);
    } catch {
      throw new Error(`outbound allow-list: "${c}" is not a CIDR (e.g. 10.20.0.0/16)`);
    }
  });
}

const blocked = (url: string, why: string) => new ApiError("validation_error", `url ${url} is not allowed: ${why} (internal and non-public addresses are refused)`);

export class OutboundPolicy {
  private readonly resolve: (hostname: string) => Promise<string[]>;
  private readonly allowed: Cidr[];

  constructor(private readonly settings: OutboundSettings) {
    this.resolve = settings.resolve ?? systemResolve;
    this.allowed = parseCidrs(settings.allowCidrs);
  }

  private problem(address: string) {
    return addressProblem(address, this.settings.allowPrivate, this.allowed);
  }

  get allowPrivate(): boolean {
    return this.settings.allowPrivate;
  }

  /**
   * Registration-time check. Throws 400 validation_error for a URL that can never be called (bad
   * scheme, blocked literal address, a name resolving to a blocked address); a name that does not
   * resolve now is accepted with `resolved: false`.
   */
  async check(raw: string): Promise<{ url: URL; resolved: boolean }> {
    const url = this.parse(raw);
    const host = hostOf(url);
    if (ipaddr.isValid(host)) {
      const why = this.problem(host);
      if (why) throw blocked(raw, why);
      return { url, resolved: true };
    }
    // "localhost." is the same name, fully qualified
    const name = host.toLowerCase().replace(/\.$/, "");
    if (!this.settings.allowPrivate && (name === "localhost" || name.endsWith(".localhost"))) throw blocked(raw, "localhost");
    let addresses: string[];
    try {
      addresses = await this.resolve(host);
    } catch {
      return { url, resolved: false };
    }
    for (const a of addresses) {
      const why = this.problem(a);
      if (why) throw blocked(raw, `${host} resolves to ${why}`);
    }
    return { url, resolved: addresses.length > 0 };
  }

  /** The address to connect to: resolved now and checked (throws validation_error when blocked or unresolvable). */
  async pin(url: URL): Promise<string> {
    const host = hostOf(url);
    const addresses = ipaddr.isValid(host) ? [host] : await this.resolve(host).catch(() => [] as string[]);
    if (addresses.length === 0) throw new ApiError("validation_error", `url ${url.origin} does not resolve`);
    for (const a of addresses) {
      const why = this.problem(a);
      if (why) throw blocked(url.origin, ipaddr.isValid(host) ? why : `${host} resolves to ${why}`);
    }
    return addresses[0]!;
  }

  /** fetch through the policy: every hop resolved, checked and pinned (see above); credentials never cross origins (followRedirects). */
  fetch: OutboundFetch = (input, init = {}) =>
    followRedirects(input, init, {
      maxRedirects: this.settings.maxRedirects ?? 5,
      parse: (raw) => this.parse(raw),
      send: async (url, hopInit) => {
        const address = await this.pin(url);
        const target = new URL(url);
        target.hostname = address.includes(":") ? `[${address}]` : address;
        const headers = new Headers(hopInit.headers);
        headers.set("host", url.host);
        // a caller's TLS options (a client certificate, a CA) are kept; the server name is always the URL's host
        const tls = url.protocol === "https:" ? { ...hopInit.tls, serverName: hostOf(url) } : undefined;
        return fetch(target, { ...hopInit, headers, tls } as RequestInit);
      },
    });

  private parse(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new ApiError("validation_error", `url "${raw.slice(0, 200)}" is not a valid URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw blocked(raw, `scheme ${url.protocol} (only http and https)`);
    if (url.username || url.password) throw blocked(raw, "credentials in the URL");
    return url;
  }
}

/**
 * Request headers that may follow a redirect to another origin. Every other header is dropped when
 * a hop changes origin (scheme, host or port): authorization, cookie, proxy-authorization, and
 * whatever header a caller configured to carry a secret (x-api-key, x-goog-api-key, an MCP
 * server's API-key header, ...) without having to name each. A client certificate (tls cert/key)
 * is dropped too. A safelist, because a credential header's name is configuration.
 */
export const CROSS_ORIGIN_HEADERS: ReadonlySet<string> = new Set([
  "accept",
  "accept-encoding",
  "accept-language",
  "content-type",
  "content-language",
  "user-agent",
  "cache-control",
  "last-event-id",
  "mcp-protocol-version",
]);

type HopInit = RequestInit & { tls?: Record<string, unknown> };

interface RedirectOptions {
  maxRedirects: number;
  /** a hop's URL, checked (throws to refuse it) */
  parse: (raw: string) => URL;
  /** one request, redirects not followed */
  send: (url: URL, init: HopInit) => Promise<Response>;
}

/**
 * Follow redirects by hand (at most `maxRedirects`): 303, and 301/302 after a POST, become a GET
 * without body; when a hop changes origin, only CROSS_ORIGIN_HEADERS are sent on and a client
 * certificate is not presented again (RFC 9110 §15.4 leaves this to the client; fetch drops only
 * authorization, and Bun's fetch forwards x-api-key and the like to any origin).
 */
export async function followRedirects(input: string | URL | Request, init: RequestInit, o: RedirectOptions): Promise<Response> {
  const request = input instanceof Request ? input : undefined;
  let url = o.parse(request ? request.url : String(input));
  let method = (init.method ?? request?.method ?? "GET").toUpperCase();
  let body: RequestInit["body"] = init.body ?? (request ? await request.arrayBuffer() : undefined);
  const headers = new Headers(request?.headers);
  new Headers(init.headers).forEach((v, k) => headers.set(k, v));
  let tls = (init as HopInit).tls;
  for (let hop = 0; ; hop++) {
    const response = await o.send(url, {
      ...init,
      method,
      headers,
      body: method === "GET" || method === "HEAD" ? undefined : body,
      redirect: "manual",
      signal: init.signal ?? request?.signal,
      tls,
    });
    const location = response.headers.get("location");
    if (response.status < 300 || response.status >= 400 || !location) return response;
    if (hop >= o.maxRedirects) throw new ApiError("validation_error", `too many redirects from ${url.origin}`);
    await response.body?.cancel().catch(() => {});
    const next = o.parse(new URL(location, url).toString());
    if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
      method = "GET";
      body = undefined;
      headers.delete("content-type");
      headers.delete("content-length");
    }
    if (!sameTarget(url, next)) {
      // the body may carry a credential too (an OAuth client secret in a form): never resent to another origin
      if (carriesBody(body) && method !== "GET" && method !== "HEAD")
        throw new ApiError("validation_error", `${url.origin} redirected a ${method} with a body to another origin (${next.origin}); not followed`);
      for (const name of [...headers.keys()]) if (!CROSS_ORIGIN_HEADERS.has(name)) headers.delete(name);
      if (tls) {
        const { cert: _cert, key: _key, passphrase: _passphrase, ...rest } = tls;
        tls = rest;
      }
    }
    url = next;
  }
}

/**
 * fetch for URLs the operator configured (providers, remote embeddings, provider probes): no
 * address policy (a local Ollama is a private address), but redirects followed like
 * OutboundPolicy.fetch, so an upstream's key never reaches the origin a redirect names.
 */
export const credentialSafeFetch: OutboundFetch = async (input, init = {}) => {
  // the hot path (a provider call) costs one spread: only a redirect takes the hand-followed path
  let first: Response | undefined = input instanceof Request ? undefined : await fetch(input, { ...init, redirect: "manual" });
  if (first && (first.status < 300 || first.status >= 400 || !first.headers.has("location"))) return first;
  return followRedirects(input, init, {
    maxRedirects: 5,
    parse: (raw) => new URL(raw),
    send: (url, hopInit) => {
      const answered = first;
      first = undefined;
      return answered ? Promise.resolve(answered) : fetch(url, hopInit as RequestInit);
    },
  });
};

/** A body with content (a Request's empty ArrayBuffer, or "", is none). */
const carriesBody = (body: RequestInit["body"]) =>
  body != null && body !== "" && !((body instanceof ArrayBuffer || ArrayBuffer.isView(body)) && body.byteLength === 0);

/** Same origin, or the same host moving from http to https on the default ports (an upgrade, not another party). */
function sameTarget(from: URL, to: URL): boolean {
  if (from.origin === to.origin) return true;
  return from.protocol === "http:" && to.protocol === "https:" && from.hostname === to.hostname && from.port === "" && to.port === "";
}

/** The URL's host without IPv6 brackets. */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1");
