/**
 * Tenant scoping at the storage layer. A TenantDb binds $tenant to every statement and refuses
 * SQL that does not use it, so every query a domain writes is scoped to one tenant.
 */
import type { Db, Params } from "./db";

export class TenantDb {
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
  run(sql: string, params: Params = {}) {
    return this.db.run(sql, this.bind(sql, params));
  }
  tx<T>(fn: () => T): T {
    return this.db.tx(fn);
  }
}

/** A domain's store factory: given a tenant, the tenant-bound repository. */
export type ForTenant<R> = (tenantId: string) => R;
