/**
 * Versioned schema migrations. Each domain owns its list (`migrations` of its factory) and the
 * composition root hands every list to Db.migrate in domain order; storage knows no domain.
 *
 * A migration's recorded id is namespaced by its domain, `<domain>/<id>` (e.g. `cache/0002_context_users`),
 * so two domains can never collide. Within a domain, migrations apply in id order, each in its own
 * transaction. `legacyId` names the id a database written before namespacing recorded (ids were global,
 * `0100_cache_entries`): such a migration is marked applied without running again, so older databases
 * open with their data. Never edit an applied migration: add a new one.
 *
 * `up` is one SQL text both backends run (portable DDL: dialect.ts), or `{ sqlite, postgres }`
 * where they differ (`portable(d => …)` builds both from a dialect). The SQLite side may be a
 * function over the bun:sqlite Database (data migrations of today's domains); the PostgreSQL side
 * may be an async function over an untenanted handle bound to the migration's transaction.
 */
import type { Database } from "bun:sqlite";
import { dialects, type Dialect, type DialectName } from "./dialect";

export type SqliteUp = string | ((db: Database) => void);
/** what a PostgreSQL data migration gets: run/all/get bound to the migration's transaction */
export interface MigrationSql {
  get<T>(sql: string, params?: Record<string, unknown>): Promise<T | undefined>;
  all<T>(sql: string, params?: Record<string, unknown>): Promise<T[]>;
  run(sql: string, params?: Record<string, unknown>): Promise<{ changes: number }>;
}
export type PostgresUp = string | ((sql: MigrationSql) => Promise<void>);

export interface Migration {
  /** `NNNN_what`, unique within its domain */
  id: string;
  up: SqliteUp | { sqlite: SqliteUp; postgres: PostgresUp };
  /** the global id an older build recorded for this same migration */
  legacyId?: string;
}

/** A migration resolved for one backend. */
export interface ResolvedMigration<Up> {
  id: string;
  up: Up;
  legacyId?: string;
}

/** Both sides of a migration from one function of the dialect (DDL that differs only in types). */
export function portable(fn: (d: Dialect) => string): { sqlite: string; postgres: string } {
  return { sqlite: fn(dialects.sqlite), postgres: fn(dialects.postgres) };
}

/** One domain's migrations. */
export interface MigrationSet {
  domain: string;
  migrations: readonly Migration[];
}

export const recordedId = (domain: string, m: Migration) => `${domain}/${m.id}`;

/** Every recorded id of the given sets, in the order they apply, resolved for SQLite. */
export function orderedMigrations(sets: readonly MigrationSet[]): Array<{ id: string; migration: ResolvedMigration<SqliteUp> }> {
  return orderedFor("sqlite", sets) as Array<{ id: string; migration: ResolvedMigration<SqliteUp> }>;
}

/** The same for PostgreSQL: a SQLite-only function migration is refused (it needs a postgres side). */
export function orderedPostgresMigrations(sets: readonly MigrationSet[]): Array<{ id: string; migration: ResolvedMigration<PostgresUp> }> {
  return orderedFor("postgres", sets) as Array<{ id: string; migration: ResolvedMigration<PostgresUp> }>;
}

/** every id a build with these sets recognises as its own in schema_migrations (ids and legacy ids) */
export function knownIds(sets: readonly MigrationSet[]): Set<string> {
  const known = new Set<string>();
  for (const { id, migration } of orderedFor("sqlite", sets)) {
    known.add(id);
    if (migration.legacyId) known.add(migration.legacyId);
  }
  return known;
}

function orderedFor(dialect: DialectName, sets: readonly MigrationSet[]): Array<{ id: string; migration: ResolvedMigration<SqliteUp | PostgresUp> }> {
  const seen = new Set<string>();
  const out: Array<{ id: string; migration: ResolvedMigration<SqliteUp | PostgresUp> }> = [];
  for (const set of sets) {
    if (!/^[a-z][a-z0-9-]*$/.test(set.domain)) throw new Error(`migration domain "${set.domain}" must be lower-case letters, digits or -`);
    for (const m of [...set.migrations].sort((a, b) => a.id.localeCompare(b.id))) {
      const id = recordedId(set.domain, m);
      if (seen.has(id)) throw new Error(`duplicate migration id ${id}`);
      seen.add(id);
      let up: SqliteUp | PostgresUp;
      if (typeof m.up === "object") up = m.up[dialect];
      else if (typeof m.up === "function" && dialect === "postgres") throw new Error(`migration ${id} is a SQLite function: give it { sqlite, postgres }`);
      else up = m.up;
      out.push({ id, migration: { id: m.id, up, legacyId: m.legacyId } });
    }
  }
  return out;
}
