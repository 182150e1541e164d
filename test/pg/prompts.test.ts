/**
 * Prompts over HTTP on PostgreSQL: CRUD, versions, diff, rollback, runs; chains.
 * (test/helpers/backend.ts: each file below runs again here, every gateway on a fresh PostgreSQL schema)
 */
import { onPostgres } from "../helpers/backend";

onPostgres("prompts/prompts.test.ts", "prompts/chains.test.ts");
