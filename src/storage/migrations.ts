/**
 * Versioned schema migrations. Each domain owns its list (`migrations` of its factory) and the
 * composition root hands every list to Db.migrate in domain order; storage knows no domain.
 *
 * A migration's recorded id is namespaced by its domain, `<domain>/<id>` (e.g. `cache/0002_context_users`),
 * so two domains can never collide. Within a domain, migrations apply in id order, each in its own
 * transaction. `legacyId` names the id a database written before namespacing recorded (ids were global,
 * `0100_cache_entries`): such a migration is marked applied without running again, so older databases
 * open with their data. Never edit an applied migration: add a new one.
 */
import type { Database } from "bun:sqlite";

export interface Migration {
  /** `NNNN_what`, unique within its domain */
  id: string;
  up: string | ((db: Database) => void);
  /** the global id an older build recorded for this same migration */
  legacyId?: string;
}

/** One domain's migrations. */
export interface MigrationSet {
  domain: string;
  migrations: readonly Migration[];
}

export const recordedId = (domain: string, m: Migration) => `${domain}/${m.id}`;

/** Every recorded id of the given sets, in the order they apply. */
export function orderedMigrations(sets: readonly MigrationSet[]): Array<{ id: string; migration: Migration }> {
  const seen = new Set<string>();
  const out: Array<{ id: string; migration: Migration }> = [];
  for (const set of sets) {
    if (!/^[a-z][a-z0-9-]*$/.test(set.domain)) throw new Error(`migration domain "${set.domain}" must be lower-case letters, digits or -`);
    for (const m of [...set.migrations].sort((a, b) => a.id.localeCompare(b.id))) {
      const id = recordedId(set.domain, m);
      if (seen.has(id)) throw new Error(`duplicate migration id ${id}`);
      seen.add(id);
      out.push({ id, migration: m });
    }
  }
  return out;
}
