/**
 * Test support for the Memory API: one real gateway per test file (real embedder, SQLite,
 * outbound policy with private targets allowed for the loopback fakes), JSON calls, exact-integer
 * parsing of contentHash, and the doc1 error envelope check.
 */
import { expect } from "bun:test";
import { startGateway, type TestGateway } from "../helpers/gateway";
import type { AppOptions } from "../../src/app";

export interface Env {
  gw: TestGateway;
  A: string;
  B: string;
  call(method: string, path: string, json?: unknown, token?: string): Promise<{ status: number; body: any; text: string; headers: Headers }>;
  stop(): Promise<void>;
}

/** JSON.parse keeping integers beyond 2^53 exact (as bigint), the reviver README shows JS clients. */
export function parseExact(text: string): any {
  return JSON.parse(text, function (_k, v, ctx?: { source?: string }) {
    if (typeof v === "number" && !Number.isSafeInteger(v) && ctx?.source && /^-?\d+$/.test(ctx.source)) return BigInt(ctx.source);
    return v;
  } as (this: unknown, k: string, v: unknown) => unknown);
}

export async function memoryEnv(overrides: Record<string, unknown> = {}, env: Record<string, string> = {}, options: AppOptions = {}): Promise<Env> {
  const gw = await startGateway({ outbound: { allow_private: true }, ...overrides }, env, options);
  const A = await gw.token("tenant-a", ["ManageConfig", "ViewMetrics", "ViewLogs"], "alice");
  const B = await gw.token("tenant-b", ["ManageConfig", "ViewMetrics", "ViewLogs"], "bob");
  const call = async (method: string, path: string, json?: unknown, token = A) => {
    const r = await gw.api(`/api/v1/memory${path}`, { method, token, json });
    const text = await r.text();
    let body: any = undefined;
    try {
      body = text ? parseExact(text) : undefined;
    } catch {
      body = text;
    }
    return { status: r.status, body, text, headers: r.headers };
  };
  return { gw, A, B, call, stop: () => gw.stop() };
}

export function expectError(r: { status: number; body: any }, status: number, type: string, message?: RegExp) {
  expect({ status: r.status, type: r.body?.error?.type }).toEqual({ status, type });
  expect(typeof r.body.error.message).toBe("string");
  expect(Object.keys(r.body)).toEqual(["error"]);
  if (message) expect(r.body.error.message).toMatch(message);
}

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const milestone = (n: number | string, extra: Record<string, unknown> = {}) => ({
  branchPurpose: "ship the memory API",
  cumulativeProgress: `progress after step ${n}`,
  thisContribution: `did step ${n}`,
  agentId: "agent-1",
  ...extra,
});
