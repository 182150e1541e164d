#!/usr/bin/env bun
/**
 * Cost of the SCIM provider's requests as a workspace grows (BENCHMARKS.md "SSO and SCIM"): the
 * provider reads the workspace's users (and team memberships) per request and lets SCIMMY filter
 * them, so the cost grows with the workspace. Through the front door in process (app.fetch: auth by
 * SCIM token, parsing, SCIMMY, SQLite), without HTTP noise. Median ms per request.
 *   bun scripts/bench/scim.ts [--sizes 100,1000,5000] [--runs 30]
 */
import { parseArgs } from "node:util";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { createApp, closeApp } from "../../src/app";
import { Logger } from "../../src/core/log";
import { median } from "./harness";

const { values } = parseArgs({ options: { sizes: { type: "string", default: "100,1000,5000" }, runs: { type: "string", default: "30" } } });
const sizes = values.sizes!.split(",").map(Number);
const runs = Number(values.runs);

for (const size of sizes) {
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-scim-"));
  const app = createApp(loadConfig({ SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: "bench-secret-bench-secret-bench" }, { rate_limits: { enabled: false } }), { logger: new Logger("error", () => {}) });
  const T = "bench";
  const { plainValue } = await app.identity.scimTokens.create(T, { name: "bench", scopes: ["users:read", "users:write", "groups:read", "groups:write"] });
  const ids: string[] = [];
  for (let i = 0; i < size; i++) ids.push((await app.identity.users.create(T, { email: `user${i}@bench.test`, identity_provider: "scim" })).id);
  const team = await app.identity.teams.create(T, { name: "g" });
  await app.identity.teams.setMembers(T, team.id, ids.slice(0, Math.min(100, size)));
  const call = async (method: string, path: string, body?: unknown) => {
    const r = await app.fetch(
      new Request(`http://bench${path}`, {
        method,
        headers: { authorization: `Bearer ${plainValue}`, "content-type": "application/scim+json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    if (r.status >= 300) throw new Error(`${method} ${path} -> ${r.status} ${await r.text()}`);
    await r.arrayBuffer();
  };
  const ms = async (fn: () => Promise<void>) => {
    const out: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      await fn();
      out.push(performance.now() - t0);
    }
    return median(out);
  };
  let n = 0;
  const rows = {
    "GET /Users?filter=userName eq (one match)": await ms(() => call("GET", `/scim/v2/Users?filter=${encodeURIComponent(`userName eq "user${size - 1}@bench.test"`)}`)),
    "GET /Users/{id}": await ms(() => call("GET", `/scim/v2/Users/${ids[0]}`)),
    "PATCH /Users/{id} active": await ms(() => call("PATCH", `/scim/v2/Users/${ids[1]}`, { schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], Operations: [{ op: "Replace", path: "active", value: n++ % 2 ? "True" : "False" }] })),
    "PATCH /Groups/{id} add member": await ms(() => call("PATCH", `/scim/v2/Groups/${team.id}`, { schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], Operations: [{ op: "Add", path: "members", value: [{ value: ids[(n++ % size)] }] }] })),
    "POST /Users": await ms(() => call("POST", "/scim/v2/Users", { schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"], userName: `new${n++}@bench.test` })),
  };
  for (const [k, v] of Object.entries(rows)) console.log(`${String(size).padStart(6)} users  ${k.padEnd(46)} ${v.toFixed(2)} ms`);
  await closeApp(app);
  rmSync(dir, { recursive: true, force: true });
}
