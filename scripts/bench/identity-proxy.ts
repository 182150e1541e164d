#!/usr/bin/env bun
/**
 * Identity's per-request cost on the proxy's miss path (BENCHMARKS.md "Identity"): one gateway
 * (cache disabled, as in proxy.ts), one keep-alive connection, the same request with four
 * credentials, in interleaved rounds so that drift of the shared machine hits each alike:
 *   tenant   a tenant token (sub = tenant): the identity check is two prefix tests, no budget
 *   user     sub = "user:<id>": user status + role permissions (cached), no budget
 *   key      an API key of a team without a budget (chain looked up once, cached)
 *   budget   an API key of a team with a budget under a parent team with one: admission + settle
 * Prints per credential the median over rounds of p50/p99 (µs) and p50 added versus `tenant`.
 *   bun scripts/bench/identity-proxy.ts [--n 2000] [--rounds 5]
 */
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { SignJWT } from "jose";
import { startTarget, freePort, median, ROOT, BENCH_JWT_SECRET } from "./harness";

const { values } = parseArgs({ options: { n: { type: "string", default: "2000" }, rounds: { type: "string", default: "5" } } });
const n = Number(values.n);
const rounds = Number(values.rounds);
const bun = process.execPath;

const upPort = await freePort();
const upstream = Bun.spawn([bun, resolve(ROOT, "scripts/bench/proxy-upstream.ts"), String(upPort)], { cwd: ROOT, stdout: "ignore", stderr: "inherit" });
for (let i = 0; i < 400; i++) {
  try {
    await fetch(`http://127.0.0.1:${upPort}/`, { method: "POST", body: "{}" });
    break;
  } catch {
    await Bun.sleep(25);
  }
}
const gw = await startTarget({
  env: {
    SVC_PROVIDERS__OPENAI__BASE_URL: `http://127.0.0.1:${upPort}`,
    SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench",
    SVC_CACHE__ENABLED: "false",
    SVC_RATE_LIMITS__ENABLED: "false",
    SVC_EMBEDDING__PROVIDER: "local",
  },
});

const sign = (sub: string, permissions: string[] = []) =>
  new SignJWT({ tenant_id: "bench", permissions }).setProtectedHeader({ alg: "HS256" }).setSubject(sub).setExpirationTime("2h").sign(new TextEncoder().encode(BENCH_JWT_SECRET));
const admin = await sign("bench-admin", ["WorkspaceAdmin"]);
const api = async (path: string, json: unknown) => {
  const r = await fetch(gw.url + path, { method: "POST", headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" }, body: JSON.stringify(json) });
  if (r.status >= 300) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as any;
};
const user = await api("/api/v1/users", { email: "bench@example.com" });
const roles = await fetch(`${gw.url}/api/v1/roles?name=viewer`, { headers: { authorization: `Bearer ${admin}` } }).then((r) => r.json() as Promise<any>);
await api(`/api/v1/users/${user.id}/roles`, { roleId: roles.roles[0].id });
const plain = await api("/api/v1/teams", { name: "no budget" });
const parent = await api("/api/v1/teams", { name: "org", maxBudgetCents: 1_000_000_000 });
const child = await api("/api/v1/teams", { name: "team", parentTeamId: parent.id, maxBudgetCents: 1_000_000_000 });
const keyPlain = await api("/api/v1/virtual-keys", { name: "plain", teamId: plain.id });
const keyBudget = await api("/api/v1/virtual-keys", { name: "budget", teamId: child.id });

const credentials = {
  tenant: await sign("bench"),
  user: await sign(`user:${user.id}`),
  key: keyPlain.key as string,
  budget: keyBudget.key as string,
};
const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello to the benchmark." }], max_tokens: 16 });

async function client(credential: string) {
  const o = { url: `${gw.url}/v1/chat/completions`, headers: { "content-type": "application/json", authorization: `Bearer ${credential}` }, body, n, warmup: 300 };
  const p = Bun.spawn([bun, resolve(ROOT, "scripts/bench/proxy-client.ts"), JSON.stringify(o)], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(p.stdout).text();
  await p.exited;
  return JSON.parse(out) as { p50us: number; p99us: number; bad: number };
}

const samples: Record<string, Array<{ p50us: number; p99us: number; bad: number }>> = {};
const entries = Object.entries(credentials);
for (let r = 0; r < rounds; r++)
  // each round starts with the next credential: no credential always runs first
  for (const [name, cred] of [...entries.slice(r % entries.length), ...entries.slice(0, r % entries.length)]) {
    console.error(`round ${r + 1}/${rounds}: ${name}`);
    (samples[name] ??= []).push(await client(cred));
  }
await gw.stop();
upstream.kill();

const p50 = (name: string) => median(samples[name]!.map((s) => s.p50us));
const out = {
  machine: `${navigator.hardwareConcurrency} cores, Bun ${Bun.version}`,
  n,
  rounds,
  perCredential: Object.fromEntries(
    Object.keys(credentials).map((k) => [k, { p50us: Math.round(p50(k)), p99us: Math.round(median(samples[k]!.map((s) => s.p99us))), non200: samples[k]!.reduce((s, x) => s + x.bad, 0) }]),
  ),
  addedP50usVsTenant: Object.fromEntries(Object.keys(credentials).map((k) => [k, Math.round(p50(k) - p50("tenant"))])),
};
console.log(JSON.stringify(out, null, 2));
