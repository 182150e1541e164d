/**
 * Many writers of one tenant at once on PostgreSQL: every create answers 201 (none 503). Every
 * transaction there is SERIALIZABLE; a read of a range inside one (a prompt's free slug) made
 * concurrent creates of different names conflict on index-page predicate locks until the retries
 * ran out — 1.5 % of 1,280 prompt creates by 32 writers answered 503 before the fix.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { postgresEnv } from "../helpers/pg-gateway";

const WRITERS = 24;
const EACH = 8;
let gw: TestGateway;
let token: string;
beforeAll(async () => {
  gw = await startGateway({}, await postgresEnv("concurrent_writes"));
  token = await gw.token("t-conc", ["WorkspaceAdmin"]);
}, 60_000);
afterAll(() => gw?.stop());

async function burst(path: string, body: (i: number) => unknown): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {};
  let next = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      for (let i = next++; i < WRITERS * EACH; i = next++) {
        const r = await gw.api(path, { method: "POST", token, json: body(i) });
        await r.arrayBuffer();
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      }
    }),
  );
  return statuses;
}

test("prompts: distinct names, and one name created by every writer at once (distinct slugs)", async () => {
  expect(await burst("/api/v1/prompts", (i) => ({ name: `prompt ${i}`, template: "Hello {{name}}" }))).toEqual({ 201: WRITERS * EACH });
  expect(await burst("/api/v1/prompts", () => ({ name: "same name", template: "Hi" }))).toEqual({ 201: WRITERS * EACH });
  const list = (await (await gw.api("/api/v1/prompts?search=same&limit=500", { token })).json()) as { data?: Array<{ slug: string }> };
  const slugs = (list.data ?? []).map((p) => p.slug);
  expect(new Set(slugs).size).toBe(slugs.length);
}, 120_000);

test("virtual keys, users and memory projects", async () => {
  expect(await burst("/api/v1/virtual-keys", (i) => ({ name: `key ${i}` }))).toEqual({ 201: WRITERS * EACH });
  expect(await burst("/api/v1/users", (i) => ({ email: `user${i}@example.com`, name: `User ${i}` }))).toEqual({ 201: WRITERS * EACH });
  expect(await burst("/api/v1/memory/projects", (i) => ({ projectId: `proj-${i}`, name: `Project ${i}`, roadmap: "" }))).toEqual({ 201: WRITERS * EACH });
}, 120_000);
