/**
 * The narrow storage interface domains use. Every query a domain writes goes through a
 * TenantDb: it binds $tenant itself and refuses SQL that does not use it, so a query without
 * tenant scoping cannot be written. A domain's store is a class over one TenantDb, built per
 * tenant with `storage.tenant(id)` (one way, everywhere).
 *
 * The few lookups that must cross tenants — finding the owner of a presented secret (an API key,
 * a SCIM token, an invitation token by its hash) or a claim that is unique across workspaces (a
 * verified SSO domain) — use `storage.global(reason)`, which says why at the call site. A
 * Postgres backend implements these same two handles.
 */
import type { Db, Params, RunResult } from "./db";

export interface SqlHandle {
  get<T>(sql: string, params?: Params): T | undefined;
  all<T>(sql: string, params?: Params): T[];
  run(sql: string, params?: Params): RunResult;
  /** read-then-write work in one IMMEDIATE transaction */
  tx<T>(fn: () => T): T;
}

export class TenantDb implements SqlHandle {
  constructor(private readonly db: Db, readonly tenantId: string) {}

  private bind(sql: string, params: Params): Params {
    if (!sql.includes("$tenant")) throw new Error(`unscoped query (no $tenant): ${sql}`);
    return { ...params, tenant: this.tenantId };
  }
  get<T>(sql: string, params: Params = {}): T | undefined {
    return this.db.get<T>(sql, this.bind(sql, params));
  }
  all<T>(sql: string, params: Params = {}): T[] {
    return this.db.all<T>(sql, this.bind(sql, params));
  }
  run(sql: string, params: Params = {}): RunResult {
    return this.db.run(sql, this.bind(sql, params));
  }
  tx<T>(fn: () => T): T {
    return this.db.tx(fn);
  }
}

export interface Storage {
  /** the tenant-bound handle every domain query goes through */
  tenant(tenantId: string): TenantDb;
  /** cross-tenant statements, each with the reason it must cross (see above) */
  global(reason: string): SqlHandle;
  /** run fn in one transaction spanning any handles used inside it */
  tx<T>(fn: () => T): T;
}

export function storageOf(db: Db): Storage {
  const global: SqlHandle = { get: (s, p) => db.get(s, p), all: (s, p) => db.all(s, p), run: (s, p) => db.run(s, p), tx: (fn) => db.tx(fn) };
  return {
    tenant: (tenantId) => new TenantDb(db, tenantId),
    global: () => global,
    tx: (fn) => db.tx(fn),
  };
}

/** A domain's store factory: given a tenant, the tenant-bound store. */
export type ForTenant<R> = (tenantId: string) => R;
