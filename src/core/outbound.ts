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
 *  - redirects are followed by hand (at most 5), each target checked the same way.
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
    if (!this.settings.allowPrivate && (host === "localhost" || host.endsWith(".localhost"))) throw blocked(raw, "localhost");
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

  /** fetch through the policy: every hop resolved, checked and pinned (see above). */
  fetch: OutboundFetch = async (input, init = {}) => {
    const request = input instanceof Request ? input : undefined;
    let url = this.parse(request ? request.url : String(input));
    let method = (init.method ?? request?.method ?? "GET").toUpperCase();
    let body: RequestInit["body"] = init.body ?? (request ? await request.arrayBuffer() : undefined);
    const headers = new Headers(request?.headers);
    new Headers(init.headers).forEach((v, k) => headers.set(k, v));
    const maxRedirects = this.settings.maxRedirects ?? 5;
    for (let hop = 0; ; hop++) {
      const address = await this.pin(url);
      const target = new URL(url);
      target.hostname = address.includes(":") ? `[${address}]` : address;
      headers.set("host", url.host);
      const response = await fetch(target, {
        ...init,
        method,
        headers,
        body: method === "GET" || method === "HEAD" ? undefined : body,
        redirect: "manual",
        signal: init.signal ?? request?.signal,
        // a caller's TLS options (a client certificate, a CA) are kept; the server name is always the URL's host
        tls: url.protocol === "https:" ? { ...(init as { tls?: object }).tls, serverName: hostOf(url) } : undefined,
      } as RequestInit);
      const location = response.headers.get("location");
      if (response.status < 300 || response.status >= 400 || !location) return response;
      if (hop >= maxRedirects) throw new ApiError("validation_error", `too many redirects from ${url.origin}`);
      await response.body?.cancel().catch(() => {});
      url = this.parse(new URL(location, url).toString());
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
        method = "GET";
        body = undefined;
        headers.delete("content-type");
        headers.delete("content-length");
      }
    }
  };

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

/** The URL's host without IPv6 brackets. */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1");
