/**
 * Keys and auth over HTTP on PostgreSQL: virtual keys, the permission matrix of every route.
 * (test/helpers/backend.ts: each file below runs again here, every gateway on a fresh PostgreSQL schema)
 */
import { onPostgres } from "../helpers/backend";

onPostgres("access-matrix.test.ts");
