#!/usr/bin/env bun
/**
 * In-process cost of what identity adds to every request (BENCHMARKS.md "Identity"), without HTTP
 * noise: the per-request principal check (tenant token, user token, token exchanged for a key) and
 * the budget guard's admit + settle (key of no team, key of a budgeted team under a budgeted
 * parent), plus a whole `Authenticator.authenticateCredential` of a memoised JWT with and without
 * the user check. Median ns per call over several rounds.
 *   bun scripts/bench/identity-check.ts [--iterations 200000] [--rounds 7]
 */
import { parseArgs } from "node:util";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { createApp, closeApp } from "../../src/app";
import { Logger } from "../../src/core/log";
import { median } from "./harness";

const { values } = parseArgs({ options: { iterations: { type: "string", default: "200000" }, rounds: { type: "string", default: "7" } } });
const N = Number(values.iterations);
const rounds = Number(values.rounds);
const dir = mkdtempSync(join(tmpdir(), "svc-bench-identity-"));
const app = createApp(loadConfig({ SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: "bench-secret-bench-secret-bench" }), { logger: new Logger("error", () => {}) });
const id = app.identity;
const T = "bench";
const user = await id.users.create(T, { email: "bench@example.com" });
await id.roles.assign(T, user.id, { roleId: (await id.roles.findByName(T, "viewer"))!.id });
const parent = await id.teams.create(T, { name: "org", maxBudgetCents: 1e12 });
const team = await id.teams.create(T, { name: "team", parentTeamId: parent.id, maxBudgetCents: 1e12 });
const loose = await id.keys.create(T, { name: "loose" });
const budgeted = await id.keys.create(T, { name: "budgeted", teamId: team.id });

const tenantJwt = await app.tokens.sign({ tenantId: T, sub: T });
const userJwt = await app.tokens.sign({ tenantId: T, sub: `user:${user.id}` });
const keyJwt = await app.tokens.sign({ tenantId: T, sub: `key:${budgeted.id}` });
const tenantP = await app.tokens.verify(tenantJwt);
const userP = await app.tokens.verify(userJwt);
const keyP = await app.tokens.verify(keyJwt);

function time(fn: () => void): number {
  const t0 = performance.now();
  for (let i = 0; i < N; i++) fn();
  return ((performance.now() - t0) * 1e6) / N;
}
async function timeAsync(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await fn();
  return ((performance.now() - t0) * 1e6) / N;
}

// the first check and admission read the stores; after that both answer from memory, synchronously
await id.access.check(userP);
await id.access.check(keyP);
for (const keyId of [loose.id, budgeted.id]) (await id.guard.admit({ tenantId: T, sub: "k", keyId }, "gpt-4o-mini")).settle(0);
function sync<T>(v: T | Promise<T>): T {
  if (v instanceof Promise) throw new Error("a warm check or admission went to the database");
  return v;
}

const cases: Record<string, () => void> = {
  "check: tenant token": () => void sync(id.access.check(tenantP)),
  "check: user token": () => void sync(id.access.check(userP)),
  "check: token exchanged for a key": () => void sync(id.access.check(keyP)),
  "guard: no key": () => sync(id.guard.admit({ tenantId: T, sub: T }, "gpt-4o-mini")).settle(0),
  "guard: key of no team": () => sync(id.guard.admit({ tenantId: T, sub: "k", keyId: loose.id }, "gpt-4o-mini")).settle(0.0001),
  "guard: key of a budgeted team (2 budgets)": () => sync(id.guard.admit({ tenantId: T, sub: "k", keyId: budgeted.id }, "gpt-4o-mini")).settle(0.0001),
};
const results: Record<string, number[]> = {};
for (let r = 0; r < rounds; r++) {
  for (const [name, fn] of Object.entries(cases)) (results[name] ??= []).push(time(fn));
  (results["authenticate: tenant JWT (whole)"] ??= []).push(await timeAsync(() => app.auth.authenticateCredential(tenantJwt)));
  (results["authenticate: user JWT (whole)"] ??= []).push(await timeAsync(() => app.auth.authenticateCredential(userJwt)));
}
await closeApp(app);
rmSync(dir, { recursive: true, force: true });
const out = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, `${median(v).toFixed(0)} ns`]));
console.log(JSON.stringify({ machine: `${navigator.hardwareConcurrency} cores, Bun ${Bun.version}`, iterations: N, rounds, medianPerCall: out }, null, 2));
