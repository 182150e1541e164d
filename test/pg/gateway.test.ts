/**
 * The usage API over HTTP on PostgreSQL (usage records the proxies write).
 * (test/helpers/backend.ts: each file below runs again here, every gateway on a fresh PostgreSQL schema)
 */
import { onPostgres } from "../helpers/backend";

onPostgres("gateway/usage-api.test.ts");
