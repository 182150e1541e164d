/**
 * The errors the async storage interface (async.ts) raises, the same on both backends, so callers
 * never look at a driver's codes:
 *
 * - StorageUnavailableError: the database cannot be reached, dropped the connection, or did not
 *   answer within the operation's deadline. The kernel maps it to 503 `service_unavailable` in the
 *   mount's envelope with `Retry-After: retryAfterSeconds` (that mapping lives in core).
 * - StorageConstraintError: a unique / foreign-key / not-null / check constraint refused a write.
 * - SchemaTooNewError: the database records migrations this build does not know (an older build
 *   against a newer schema): the process must refuse to start.
 * - UnscopedQueryError: a tenant handle got SQL without `$tenant`.
 */
export class StorageUnavailableError extends Error {
  override readonly name = "StorageUnavailableError";
  readonly code = "storage_unavailable";
  constructor(
    message: string,
    /** seconds a client should wait before retrying (Retry-After) */
    readonly retryAfterSeconds = 2,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export type ConstraintKind = "unique" | "foreign_key" | "not_null" | "check" | "other";

export class StorageConstraintError extends Error {
  override readonly name = "StorageConstraintError";
  constructor(
    readonly kind: ConstraintKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export class SchemaTooNewError extends Error {
  override readonly name = "SchemaTooNewError";
  constructor(
    /** applied migration ids this build does not know */
    readonly unknown: readonly string[],
    where: string,
  ) {
    super(
      `the database (${where}) has ${unknown.length} applied migration(s) this build does not know: ${unknown.slice(0, 10).join(", ")}${unknown.length > 10 ? ", …" : ""}. ` +
        "It was migrated by a newer build of svc; run that build (or newer) against it. This build refuses to start so it cannot misread or damage the newer schema.",
    );
  }
}

export class UnscopedQueryError extends Error {
  override readonly name = "UnscopedQueryError";
  constructor(sql: string) {
    super(`unscoped query (no $tenant): ${sql}`);
  }
}

const SQLITE_CONSTRAINT: Record<string, ConstraintKind> = {
  SQLITE_CONSTRAINT_UNIQUE: "unique",
  SQLITE_CONSTRAINT_PRIMARYKEY: "unique",
  SQLITE_CONSTRAINT_FOREIGNKEY: "foreign_key",
  SQLITE_CONSTRAINT_NOTNULL: "not_null",
  SQLITE_CONSTRAINT_CHECK: "check",
};

/**
 * The storage error of a bun:sqlite error code (on the request thread's connection or the writer
 * thread's), or undefined when the code is not one the interface names: a constraint, or a write lock
 * another connection held past busy_timeout (a 503, retried by the client).
 */
export function sqliteStorageError(code: unknown, message: string, cause?: unknown): Error | undefined {
  if (typeof code !== "string") return undefined;
  if (code.startsWith("SQLITE_CONSTRAINT")) return new StorageConstraintError(SQLITE_CONSTRAINT[code] ?? "other", message, { cause });
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return new StorageUnavailableError(`database busy: ${message}`, 1, { cause });
  return undefined;
}
