/**
 * SSO sign-in returning to the dashboard (src/identity/sso/handoff.ts): a sign-in started with
 * `returnTo=/ui` ends with a 303 to `/ui#sso=<one-time code>` (the token is in no URL), and the code
 * is exchanged once, within 60 s, at POST /api/v1/auth/sso-code. Only a dashboard path is accepted
 * as returnTo (no open redirect); without it the callback answers the token as JSON, as before.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startIdentity, uuid, type IdentityEnv } from "../identity/helpers";
import { DnsServer, FakeOidcProvider } from "../identity/sso-fakes";
import { SsoHandoff, validReturnTo } from "../../src/identity/sso/handoff";

let env: IdentityEnv;
let dns: DnsServer;
let idp: FakeOidcProvider;
let domain: string;
const C = "/api/v1/sso/connections";

beforeAll(async () => {
  dns = await DnsServer.start();
  idp = await FakeOidcProvider.start();
  env = await startIdentity({ outbound: { allow_private: true }, identity: { sso: { dns_servers: dns.address, dns_timeout_ms: 1000 } } });
  domain = `acme-${uuid().slice(0, 8)}.test`;
  const c = (await env.call("POST", C, env.A, { name: "dashboard sso", protocol: "oidc", jitProvisioning: true, defaultRole: "viewer", oidcConfig: { issuerUrl: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret } })).body;
  const d = (await env.call("POST", `${C}/${c.id}/domains`, env.A, { domain })).body.domain;
  dns.records.set(`_svc-verify.${domain}`, [d.verificationToken]);
  expect((await env.call("PUT", `${C}/${c.id}/domains/${d.id}/verify`, env.A)).body.success).toBe(true);
  expect((await env.call("POST", `${C}/${c.id}/test`, env.A)).body.success).toBe(true);
  expect((await env.call("POST", `${C}/${c.id}/activate`, env.A)).body.status).toBe("active");
}, 60_000);
afterAll(async () => {
  await env?.gw.stop();
  dns?.stop();
  idp?.stop();
});

/** the browser's path: svc -> the identity provider -> the callback; the callback's answer */
async function signIn(email: string, returnTo?: string): Promise<Response> {
  idp.email = email;
  const q = new URLSearchParams({ email, ...(returnTo ? { returnTo } : {}) });
  const s = await fetch(`${env.gw.url}/api/v1/sso/login?${q}`, { redirect: "manual" });
  expect(s.status).toBe(302);
  const atIdp = await fetch(s.headers.get("location")!, { redirect: "manual" });
  expect(atIdp.status).toBe(302);
  return fetch(atIdp.headers.get("location")!, { redirect: "manual" });
}
const exchange = (code: string) => env.call("POST", "/api/v1/auth/sso-code", undefined, { code });

describe("SSO sign-in returning to the dashboard", () => {
  test("returnTo=/ui: 303 to /ui#sso=<code>, the code gives the token once; no token in any URL", async () => {
    const back = await signIn(`ada@${domain}`, "/ui");
    expect(back.status).toBe(303);
    const location = back.headers.get("location")!;
    const m = /^\/ui#sso=([A-Za-z0-9_-]+)$/.exec(location);
    expect(m).not.toBeNull();
    expect(location).not.toContain("eyJ"); // no JWT
    const first = await exchange(m![1]!);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ tokenType: "Bearer", workspace: "tenant-a", user: { email: `ada@${domain}` } });
    expect(first.body.permissions).toContain("ViewMetrics");
    // the token acts as the user
    const me = await env.gw.api("/api/v1/usage/overview?range=hour", { token: first.body.accessToken });
    expect(me.status).toBe(200);
    // one use
    const again = await exchange(m![1]!);
    expect(again.status).toBe(401);
    expect(again.body.error?.type ?? again.body.type).toBe("authentication_error");
  });

  test("behind a path prefix: returnTo=/svc/ui/ comes back there", async () => {
    const back = await signIn(`grace@${domain}`, "/svc/ui/");
    expect(back.status).toBe(303);
    expect(back.headers.get("location")).toMatch(/^\/svc\/ui\/#sso=[A-Za-z0-9_-]+$/);
  });

  test("only a dashboard path is a returnTo (no open redirect); a wrong code is refused", async () => {
    for (const bad of ["https://evil.test/ui", "//evil.test/ui", "/ui/../admin", "/elsewhere", "/ui?x=1", "/\\evil.test/ui"]) {
      const r = await fetch(`${env.gw.url}/api/v1/sso/login?${new URLSearchParams({ email: `ada@${domain}`, returnTo: bad })}`, { redirect: "manual" });
      expect([bad, r.status]).toEqual([bad, 400]);
    }
    expect((await exchange("not-a-code")).status).toBe(401);
    expect((await env.call("POST", "/api/v1/auth/sso-code", undefined, {})).status).toBe(400);
  });

  test("without returnTo the callback still answers the token as JSON", async () => {
    const r = await signIn(`lin@${domain}`);
    expect(r.status).toBe(200);
    expect(((await r.json()) as any).accessToken).toEqual(expect.any(String));
  });

  test("a code expires after 60 s; a sign-in's returnTo is used once", () => {
    let now = 1_000_000;
    const h = new SsoHandoff(() => now);
    h.remember("state-1", "/ui");
    expect(h.takeReturn("state-1")).toBe("/ui");
    expect(h.takeReturn("state-1")).toBeUndefined();
    const result = { accessToken: "t", tokenType: "Bearer" as const, expiresIn: 60, workspace: "w", connectionId: "c", user: { id: "u", email: "e", name: null }, permissions: [] as string[], created: false };
    const code = (loc: string) => /#sso=(.+)$/.exec(loc)![1]!;
    const fresh = code(h.redirect("/ui", result).headers.get("location")!);
    now += 59_000;
    expect(h.redeem(fresh).accessToken).toBe("t");
    const stale = code(h.redirect("/ui", result).headers.get("location")!);
    now += 60_001;
    expect(() => h.redeem(stale)).toThrow("unknown, used or expired");
    expect(validReturnTo("/ui") && validReturnTo("/a/b/ui/") && !validReturnTo("/ui/x")).toBe(true);
  });
});
