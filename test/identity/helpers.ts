/**
 * Test support for the identity domain: one gateway per file with admin tokens for workspaces A
 * and B, a token without permissions, a JSON call wrapper, the doc3 envelope check and a fake
 * wall clock (assignment/invitation expiry and budget periods without sleeping).
 */
import { expect } from "bun:test";
import { startGateway, type TestGateway } from "../helpers/gateway";
import type { AppOptions } from "../../src/app";

export class FakeWallClock {
  constructor(public ms = Date.parse("2030-06-12T10:30:00.000Z")) {}
  now = () => this.ms;
  advance(ms: number) {
    this.ms += ms;
  }
}

export interface IdentityEnv {
  gw: TestGateway;
  /** WorkspaceAdmin of tenant-a / tenant-b */
  A: string;
  B: string;
  /** tenant-a, no permission */
  none: string;
  call(method: string, path: string, token: string | undefined, json?: unknown): Promise<{ status: number; body: any; headers: Headers }>;
}

export async function startIdentity(overrides: Record<string, unknown> = {}, options: AppOptions = {}): Promise<IdentityEnv> {
  const gw = await startGateway({ rate_limits: { enabled: false }, ...overrides }, {}, options);
  return {
    gw,
    A: await gw.token("tenant-a", ["WorkspaceAdmin"], "admin-a"),
    B: await gw.token("tenant-b", ["WorkspaceAdmin"], "admin-b"),
    none: await gw.token("tenant-a", [], "nobody"),
    async call(method, path, token, json) {
      const r = await gw.api(path, { method, token, json });
      const text = await r.text();
      let body: any = text;
      try {
        body = JSON.parse(text);
      } catch {}
      return { status: r.status, body, headers: r.headers };
    },
  };
}

/** exact status and exactly the doc3 envelope {error:{type,message}}; optionally a substring of the message */
export function expectError(r: { status: number; body: any }, status: number, type: string, contains?: string) {
  expect({ status: r.status, body: r.body }).toEqual({ status, body: { error: { type, message: expect.any(String) } } });
  if (contains) expect(r.body.error.message).toContain(contains);
}

export const uuid = () => crypto.randomUUID();
