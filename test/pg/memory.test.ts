/**
 * Memory over HTTP on PostgreSQL: projects, milestones, logs, branches, merge; search and saved indexes.
 * (test/helpers/backend.ts: each file below runs again here, every gateway on a fresh PostgreSQL schema)
 */
import { onPostgres } from "../helpers/backend";

onPostgres("memory/projects.test.ts", "memory/search.test.ts");
