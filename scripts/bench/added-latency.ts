#!/usr/bin/env bun
/**
 * Proxy miss added latency at 1 connection, cache off, for several checkouts side by side: each
 * round, one sequential keep-alive client (proxy-client.ts) interleaves the direct upstream call
 * and every gateway request by request; "added" is each gateway's p50 minus the direct call's,
 * paired within the round. Prints per-round values and the median over rounds.
 *
 *   bun scripts/bench/added-latency.ts [--rounds 5] [--n 1000] [--gap MS] [--credential tenant|user|key] DIR[@K=V,...]...   (this checkout is always "this")
 *
 * --gap: every request waits MS idle first, so each gateway answers after an idle gap instead of
 * right after its previous request (a woken process: returned allocator pages, GC and JIT threads);
 * the 1-connection figures of regress.ts sit in between (1-5 ms between two requests to one gateway).
 *
 * --credential: what the requests authenticate with (each gateway gets its own, made through its
 * admin API as scripts/bench/identity-proxy.ts makes them): `tenant` (default) a tenant token;
 * `user` a token acting for a user (sub = user:<id>, viewer role); `key` an API key of a team
 * without a budget. The checkouts compared need the identity API (users, roles, teams, virtual keys).
 *
 * DIR@K=V,...: that checkout's gateway with extra environment variables (e.g. `.@MIMALLOC_PURGE_DELAY=-1`
 * runs this checkout a second time with the allocator's purging off), to measure a runtime setting paired.
 */
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { benchAdmin, benchToken, interleaved, median, startBenchUpstream, startTarget, waitReady, type Target } from "./harness";

const { values, positionals } = parseArgs({
  options: { rounds: { type: "string", default: "5" }, n: { type: "string", default: "1000" }, gap: { type: "string", default: "0" }, credential: { type: "string", default: "tenant" } },
  allowPositionals: true,
});
if (!["tenant", "user", "key"].includes(values.credential)) throw new Error(`--credential: tenant, user or key (got ${values.credential})`);
const upstream = await startBenchUpstream();
const env = { SVC_PROVIDERS__OPENAI__BASE_URL: upstream.url, SVC_PROVIDERS__OPENAI__API_KEY: "sk-bench", SVC_CACHE__ENABLED: "false", SVC_RATE_LIMITS__ENABLED: "false" };
const targets: Record<string, Target> = { this: await startTarget({ env }) };
for (const spec of positionals) {
  // DIR@K=V,K=V (a directory may itself contain "@": the split is at the "@" before the first NAME=)
  const m = /^(.*?)@([A-Za-z_][A-Za-z0-9_]*=.*)$/.exec(spec);
  const dir = m ? m[1]! : spec;
  const extra = m ? Object.fromEntries(m[2]!.split(",").map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)])) : {};
  targets[spec] = await startTarget({ env: { ...env, ...extra }, root: resolve(dir) });
}
for (const t of Object.values(targets)) await waitReady(t.url);

/** The credential of --credential on one gateway (a user or an API key is made through its admin API). */
async function credentialOn(url: string): Promise<string> {
  if (values.credential === "tenant") return benchToken();
  const admin = await benchAdmin(url);
  return values.credential === "key" ? admin.teamKey("bench", { name: "no budget" }) : admin.userToken();
}
const headersOf: Record<string, Record<string, string>> = {};
for (const [name, t] of Object.entries(targets)) headersOf[name] = { "content-type": "application/json", authorization: `Bearer ${await credentialOn(t.url)}` };
const headers = { "content-type": "application/json", authorization: `Bearer ${await benchToken()}` };
const body = JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Say hello to the benchmark." }], max_tokens: 16 });
const added: Record<string, number[]> = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
for (let r = 0; r < Number(values.rounds); r++) {
  const names = Object.keys(targets);
  const order = r % 2 ? names.reverse() : names;
  const spec = { warmup: 200, reference: "direct", body, n: Number(values.n), gapMs: Number(values.gap), targets: [{ name: "direct", url: `${upstream.url}/v1/chat/completions`, headers }, ...order.map((name) => ({ name, url: `${targets[name]!.url}/v1/chat/completions`, headers: headersOf[name]! }))] };
  const res = await interleaved(spec);
  for (const name of names) added[name]!.push(res[name]!.addedP50us);
  console.error(`round ${r + 1}: ${names.map((k) => `${k} ${res[k]!.addedP50us.toFixed(0)} µs`).join(", ")}`);
}
for (const [name, xs] of Object.entries(added)) console.log(`${name}: added p50 median ${median(xs).toFixed(0)} µs, rounds ${xs.map((x) => x.toFixed(0)).join(" ")}`);
for (const t of Object.values(targets)) await t.stop();
upstream.proc.kill();
