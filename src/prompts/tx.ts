/**
 * Transactions of the prompts domain whose refusals commit. A refusal (an ApiError: not found, a
 * status move not allowed, a folder not empty) ends the transaction with COMMIT and is thrown
 * after it; any other error rolls back. Every refusal in this domain comes before the
 * transaction's first write (keep it so: `fn` must refuse before it writes), so the commit writes
 * nothing of ours — but while other domains still run synchronous statements on the same SQLite
 * connection (docs/notes/postgres-plan.md, "Transition hazard"), a statement of theirs that ran
 * between our awaits is inside our transaction, and a ROLLBACK would undo it with ours.
 */
import { ApiError } from "../core/errors";

/** a store: its tx runs fn in one transaction of the async storage */
interface Transactional {
  tx<R>(fn: () => Promise<R>): Promise<R>;
}

/** `store.tx(fn)`, with fn's refusals committed and thrown after the transaction (see above) */
export async function refusable<T>(store: Transactional, fn: () => Promise<T>): Promise<T> {
  const out = await store.tx(async (): Promise<{ value: T } | { refused: ApiError }> => {
    try {
      return { value: await fn() };
    } catch (e) {
      if (e instanceof ApiError) return { refused: e };
      throw e;
    }
  });
  if ("refused" in out) throw out.refused;
  return out.value;
}
