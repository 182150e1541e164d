/**
 * Readiness on PostgreSQL: /ready's checks (database, migrations) beside the upstream probes.
 * (test/helpers/backend.ts: each file below runs again here, every gateway on a fresh PostgreSQL schema)
 */
import { onPostgres } from "../helpers/backend";

onPostgres("ops/readiness.test.ts");
