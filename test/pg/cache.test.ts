/**
 * The cache over HTTP on PostgreSQL: hit/miss through the proxy, entries, purge; the per-tenant settings.
 * (test/helpers/backend.ts: each file below runs again here, every gateway on a fresh PostgreSQL schema)
 */
import { onPostgres } from "../helpers/backend";

onPostgres("cache/routes.test.ts", "cache/learned.test.ts");
