/** The outbound URL policy (SSRF): every blocked range, names resolving into them, rebinding, redirects, pinning. */
import { describe, expect, test, afterAll } from "bun:test";
import { OutboundPolicy, addressProblem } from "../src/core/outbound";
import { ApiError } from "../src/core/errors";

const refused = async (p: Promise<unknown>) => {
  const e = await p.then(() => undefined, (x) => x);
  expect(e).toBeInstanceOf(ApiError);
  expect((e as ApiError).type).toBe("validation_error");
  return (e as ApiError).message;
};

describe("address ranges", () => {
  const blockedAddresses = [
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["::1", "loopback"],
    ["10.0.0.5", "private"],
    ["172.16.3.4", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "linkLocal"], // cloud metadata
    ["fe80::1", "linkLocal"],
    ["100.64.0.1", "carrierGradeNat"],
    ["fc00::1", "uniqueLocal"],
    ["fd12:3456::1", "uniqueLocal"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["::ffff:127.0.0.1", "loopback"], // IPv4-mapped
    ["::ffff:169.254.169.254", "linkLocal"],
    ["::ffff:10.0.0.1", "private"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["192.0.2.10", "reserved"], // documentation
  ] as const;
  for (const [a, range] of blockedAddresses) test(`${a} is refused (${range})`, () => expect(addressProblem(a)).toContain(range));
  test("public unicast addresses are allowed, mapped or not", () => {
    for (const a of ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) expect(addressProblem(a)).toBeUndefined();
  });
  test("allowPrivate admits loopback and private (development), never unspecified or multicast", () => {
    for (const a of ["127.0.0.1", "::1", "10.1.1.1", "169.254.1.1", "fd00::1"]) expect(addressProblem(a, true)).toBeUndefined();
    for (const a of ["0.0.0.0", "224.0.0.1"]) expect(addressProblem(a, true)).toBeDefined();
  });
});

describe("check (registration)", () => {
  const dns: Record<string, string[]> = { "public.example": ["93.184.216.34"], "internal.example": ["10.0.0.7"], "mixed.example": ["93.184.216.34", "127.0.0.1"], "mapped.example": ["::ffff:169.254.169.254"] };
  const policy = new OutboundPolicy({ allowPrivate: false, resolve: async (h) => dns[h] ?? Promise.reject(new Error("ENOTFOUND")) });
  test("schemes other than http(s), credentials in the URL and junk are refused", async () => {
    for (const u of ["ftp://public.example/", "file:///etc/passwd", "gopher://x/", "http://user:pw@public.example/", "not a url", "javascript:alert(1)"]) await refused(policy.check(u));
  });
  test("literal blocked addresses, localhost, and names resolving to blocked addresses are refused", async () => {
    for (const u of ["http://127.0.0.1:8080/mcp", "http://[::1]/", "http://169.254.169.254/latest/meta-data/", "http://[::ffff:127.0.0.1]/", "http://localhost/", "http://api.localhost/", "http://internal.example/", "http://mixed.example/", "http://mapped.example/", "http://0.0.0.0/"]) {
      expect(`${u}: ${await refused(policy.check(u))}`).toContain("not allowed");
    }
  });
  test("issue 22 item 14: the fully qualified localhost (trailing dot) and IPv4-compatible IPv6 (::/96) are refused at registration", async () => {
    // the resolver here does not know these names (registration would otherwise accept them as "not resolved yet")
    for (const u of ["http://localhost./", "http://LOCALHOST./mcp", "http://api.localhost./", "http://[::127.0.0.1]/", "http://[::169.254.169.254]/", "http://[::10.0.0.1]:8080/", "http://[::8.8.8.8]/"])
      expect(`${u}: ${await refused(policy.check(u))}`).toContain("not allowed");
    expect(addressProblem("::7f00:1")).toContain("IPv4-compatible");
    // never admitted, even where private targets are (development)
    expect(addressProblem("::7f00:1", true)).toContain("IPv4-compatible");
    await refused(new OutboundPolicy({ allowPrivate: true }).check("http://[::127.0.0.1]/"));
    // :: and ::1 keep their own classification
    expect(addressProblem("::1")).toContain("loopback");
    expect(addressProblem("::1", true)).toBeUndefined();
  });
  test("public names and addresses pass; a name that does not resolve yet is accepted (checked again at every connection)", async () => {
    expect((await policy.check("https://public.example/mcp")).resolved).toBe(true);
    expect((await policy.check("https://8.8.8.8/")).resolved).toBe(true);
    expect((await policy.check("https://not-yet.example/")).resolved).toBe(false);
    await refused(policy.fetch("https://not-yet.example/"));
  });
});

describe("fetch (every connection)", () => {
  const hits: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(r) {
      const u = new URL(r.url);
      hits.push(`${r.method} ${u.pathname} host=${r.headers.get("host")}`);
      if (u.pathname === "/redirect-internal") return Response.redirect("http://169.254.169.254/latest/meta-data/", 302);
      if (u.pathname === "/redirect-ok") return new Response(null, { status: 303, headers: { location: "/ok" } });
      return Response.json({ ok: true, path: u.pathname });
    },
  });
  afterAll(() => server.stop(true));
  const port = server.port;

  test("DNS rebinding: the name is resolved again at connection time and the new (internal) answer is refused", async () => {
    let answer = ["93.184.216.34"];
    const policy = new OutboundPolicy({ allowPrivate: false, resolve: async () => answer });
    expect((await policy.check(`http://rebind.example:${port}/`)).resolved).toBe(true);
    answer = ["127.0.0.1"]; // the attacker's DNS now points inside
    expect(await refused(policy.fetch(`http://rebind.example:${port}/`))).toContain("loopback");
    expect(hits).toHaveLength(0);
  });

  test("with private targets allowed (tests), the connection is pinned to the resolved address and keeps the name as Host", async () => {
    const policy = new OutboundPolicy({ allowPrivate: true, resolve: async () => ["127.0.0.1"] });
    const r = await policy.fetch(`http://svc-mcp.test:${port}/ok`);
    expect(await r.json()).toEqual({ ok: true, path: "/ok" });
    expect(hits.at(-1)).toBe(`GET /ok host=svc-mcp.test:${port}`);
  });

  test("redirects are re-checked: a redirect to the metadata address is refused; a 303 becomes a GET", async () => {
    // only the test server's own address is admitted (an operator's allow-list), not the metadata range
    const policy = new OutboundPolicy({ allowPrivate: false, allowCidrs: ["127.0.0.1/32"], resolve: async () => ["127.0.0.1"] });
    expect(await refused(policy.fetch(`http://svc-mcp.test:${port}/redirect-internal`))).toContain("169.254.169.254 is a linkLocal address");
    expect(hits.at(-1)).toBe(`GET /redirect-internal host=svc-mcp.test:${port}`); // the first hop went out, the redirect did not
    const r = await policy.fetch(`http://svc-mcp.test:${port}/redirect-ok`, { method: "POST", body: "x" });
    expect(await r.json()).toEqual({ ok: true, path: "/ok" });
    expect(hits.slice(-2)).toEqual([`POST /redirect-ok host=svc-mcp.test:${port}`, `GET /ok host=svc-mcp.test:${port}`]);
  });

  test("an allow-list admits its network only, and never unspecified or multicast addresses", () => {
    expect(() => new OutboundPolicy({ allowPrivate: false, allowCidrs: ["10.20.0.0/33"] })).toThrow(/not a CIDR/);
    const p = new OutboundPolicy({ allowPrivate: false, allowCidrs: ["10.20.0.0/16", "0.0.0.0/0"] });
    return Promise.all([
      p.check("http://10.20.3.4/").then((r) => expect(r.resolved).toBe(true)),
      refused(p.check("http://0.0.0.0/")),
      refused(p.check("http://224.0.0.1/")),
    ]);
  });
});

describe("TLS through the policy (certificates in test/fixtures/tls, one test CA)", () => {
  const dir = `${import.meta.dir}/fixtures/tls/`;
  const file = (n: string) => Bun.file(dir + n);
  // an upstream that demands a client certificate signed by the test CA
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: file("server.pem"), key: file("server.key"), ca: file("ca.pem"), requestCert: true, rejectUnauthorized: true },
    fetch: (req) => new Response(`hello ${req.headers.get("host")}`),
  });
  afterAll(() => server.stop(true));
  const policy = new OutboundPolicy({ allowPrivate: true, resolve: async () => ["127.0.0.1"] });
  const url = `https://upstream.svc-test:${server.port}/x`;

  test("the caller's TLS options (CA, client certificate) reach the handshake; the server name stays the URL's host", async () => {
    const r = await policy.fetch(url, { tls: { ca: file("ca.pem"), cert: file("client.pem"), key: file("client.key") } } as RequestInit);
    expect(r.status).toBe(200);
    expect(await r.text()).toBe(`hello upstream.svc-test:${server.port}`);
  });

  test("without the client certificate the upstream refuses the handshake; without the CA the certificate is not trusted", async () => {
    expect(await policy.fetch(url, { tls: { ca: file("ca.pem") } } as RequestInit).then(() => "connected", (e) => String(e))).toMatch(/TLS|handshake|EPROTO/i);
    expect(await policy.fetch(url).then(() => "connected", (e) => String(e))).toMatch(/certificate/i);
  });
});
