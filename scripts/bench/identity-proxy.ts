#!/usr/bin/env bun
/**
 * Identity's per-request cost on the proxy's miss path (BENCHMARKS.md "Identity"): one gateway
 * (cache disabled, as in proxy.ts), the same request with four credentials, sent interleaved request
 * by request (proxy-client.ts: one keep-alive connection per credential, the order rotating every
 * round), so that drift of the shared machine hits each alike and each request is paired with a
 * `tenant` request of the same round:
 *   tenant   a tenant token (sub = tenant): the identity check is two prefix tests, no budget
 *   user     sub = "user:<id>": user status + role permissions (cached), no budget
 *   key      an API key of a team without a budget (chain looked up once, cached)
 *   budget   an API key of a team with a budget under a parent team with one: admission + settle
 * Repeats the whole run `rounds` times; prints per credential the median over runs of p50/p99 (µs)
 * and of the paired added p50 versus `tenant`.
 *   bun scripts/bench/identity-proxy.ts [--n 2000] [--rounds 5]
 */
import { parseArgs } from "node:util";
import { benchAdmin, benchToken, startTarget, startBenchUpstream, median, interleaved } from "./harness";

const { values } = parseArgs({ options: { n: { type: "string", default: "2000" }, rounds: { type: "string", default: "5" } } });
const n = Number(values.n);
const rounds = Number(values.rounds);

const upstream = await startBenchUpstream();
const gw = await startTarget({
  env: {
    SVC_PROVIDERS__OPENAI__BASE_URL: upstream.url,
    SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench",
    SVC_CACHE__ENABLED: "false",
    SVC_RATE_LIMITS__ENABLED: "false",
    SVC_EMBEDDING__PROVIDER: "local",
  },
});

const admin = await benchAdmin(gw.url);
const parent = await admin.post("/api/v1/teams", { name: "org", maxBudgetCents: 1_000_000_000 });
const credentials = {
  tenant: await benchToken({ sub: "bench" }),
  user: await admin.userToken(),
  key: await admin.teamKey("plain", { name: "no budget" }),
  budget: await admin.teamKey("budget", { name: "team", parentTeamId: parent.id, maxBudgetCents: 1_000_000_000 }),
};
const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello to the benchmark." }], max_tokens: 16 });

interface Measured { p50us: number; p99us: number; addedP50us: number; bad: number }
async function run(): Promise<Record<string, Measured>> {
  const targets = Object.entries(credentials).map(([name, cred]) => ({ name, url: `${gw.url}/v1/chat/completions`, headers: { "content-type": "application/json", authorization: `Bearer ${cred}` } }));
  const o = { targets, body, n, warmup: 300, reference: "tenant" };
  return interleaved(o);
}

const samples: Record<string, Measured[]> = {};
for (let r = 0; r < rounds; r++) {
  console.error(`run ${r + 1}/${rounds}`);
  for (const [name, m] of Object.entries(await run())) (samples[name] ??= []).push(m);
}
await gw.stop();
upstream.proc.kill();

const p50 = (name: string) => median(samples[name]!.map((s) => s.p50us));
const out = {
  machine: `${navigator.hardwareConcurrency} cores, Bun ${Bun.version}`,
  n,
  rounds,
  perCredential: Object.fromEntries(
    Object.keys(credentials).map((k) => [k, { p50us: Math.round(p50(k)), p99us: Math.round(median(samples[k]!.map((s) => s.p99us))), non200: samples[k]!.reduce((s, x) => s + x.bad, 0) }]),
  ),
  addedP50usVsTenant: Object.fromEntries(Object.keys(credentials).map((k) => [k, Math.round(median(samples[k]!.map((s) => s.addedP50us)))])),
};
console.log(JSON.stringify(out, null, 2));
