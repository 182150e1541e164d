/**
 * What the identity domain needs from other domains, declared here (the composition root hands in
 * the implementations; the type check proves they fit):
 *  - KeyRegistry: svc API keys, the virtual keys teams own (src/keys' ApiKeyService fits);
 *  - UsageReader: the gateway's usage records (spend of keys, hourly analytics), read after the
 *    gateway's buffered records were written, so reads see every settled request;
 *  - AddCheck: registers the per-request check of principals (core's Authenticator.addCheck).
 */
import type { PrincipalCheck } from "../core/auth";

export interface KeyRecord {
  id: string;
  tenantId: string;
  name: string;
  prefix: string;
  permissions: string[];
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** async: the keys domain keeps them on the async storage (SQLite or PostgreSQL) */
export interface KeyRegistry {
  /** a new key; the plain key is returned once */
  create(tenantId: string, name: string, permissions?: string[]): Promise<{ key: string; record: KeyRecord }>;
  list(tenantId: string): Promise<KeyRecord[]>;
  get(tenantId: string, id: string): Promise<KeyRecord | undefined>;
  /** rejects not_found when no active key has this id */
  revoke(tenantId: string, id: string): Promise<void>;
}

/** One hour of one key's usage with one model. */
export interface HourlyUsage {
  /** start of the hour, ISO 8601 UTC */
  hour: string;
  model: string;
  requests: number;
  tokens: number;
  costUsd: number;
}

export interface UsageReader {
  /** write the gateway's buffered usage records now */
  flush(): void | Promise<void>;
  /** list-price spend (USD) of these keys' records created at or after `since` (ISO 8601) */
  spendUsd(tenantId: string, keyIds: readonly string[], since: string): number | Promise<number>;
  /** one key's usage per hour and model in [since, until) */
  hourly(tenantId: string, keyId: string, since: string, until: string): HourlyUsage[] | Promise<HourlyUsage[]>;
  /** the models a key used before `before` */
  modelsBefore(tenantId: string, keyId: string, before: string): string[] | Promise<string[]>;
}

export type AddCheck = (check: PrincipalCheck) => void;

/** fetch through the shared outbound URL policy (core/outbound.ts): OIDC discovery, JWKS, token endpoint, https-file verification */
export type OutboundFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** the outbound URL policy's registration-time check (core/outbound.ts OutboundPolicy.check): throws for a URL svc must never call */
export type OutboundCheck = (url: string) => Promise<unknown>;

/** mints svc access tokens (core's TokenService): SSO sign-in issues one for the user */
export interface TokenMinter {
  sign(claims: { tenantId: string; sub?: string; permissions?: string[] }, ttlSecs?: number): Promise<string>;
  readonly maxTtlSecs: number;
}
