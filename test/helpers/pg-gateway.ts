/**
 * Gateways on PostgreSQL for tests: the settings that put a test gateway on a fresh schema of the
 * run's throwaway cluster (test/helpers/postgres.ts), with the secrets replicas must share.
 *   const gw = await startGateway({}, await postgresEnv("prompts"));
 */
import { freshSchema } from "./postgres";

/** the SSO secret key every test replica shares (32 bytes, base64) */
export const TEST_SSO_SECRET_KEY = Buffer.alloc(32, 7).toString("base64");

/** SVC_* variables for a gateway on a new, empty schema (migrated by the gateway at start). */
export async function postgresEnv(label: string): Promise<Record<string, string>> {
  const { url, schema } = await freshSchema(label);
  return { SVC_STORAGE__URL: url, SVC_STORAGE__SCHEMA: schema, SVC_IDENTITY__SSO__SECRET_KEY: TEST_SSO_SECRET_KEY };
}
