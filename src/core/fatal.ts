/**
 * Process-level safety net for the production server (`svc serve`): errors that escape every
 * handler are logged as one structured JSON line FIRST (synchronously, so the line is on stdout
 * even if the process dies right after), then:
 *
 * - unhandledRejection: the gateway keeps running. A promise nobody awaited has already unwound
 *   its own work; exiting would drop every tenant's in-flight requests and streams for a bug in
 *   one of them. (Bun's default is to print and exit 1.)
 * - uncaughtException: a synchronous throw escaped to the event loop, so in-memory state (cache
 *   indexes vs SQLite, in-flight slots) may be half-updated: graceful stop (no new requests,
 *   in-flight ones finish up to server.shutdown_timeout_ms), then exit 1 for the supervisor to
 *   restart. SQLite is the source of truth, so a restart loses nothing.
 *
 * Decision recorded in docs/decisions.md ("Process: fatal errors").
 */
import { writeSync } from "node:fs";

export interface FatalHandlers {
  /** Graceful stop used before exiting on an uncaught exception (set once the server runs). */
  setShutdown(fn: () => Promise<void>): void;
  /** Remove the listeners (tests). */
  uninstall(): void;
  /** Counts since install (tests, diagnostics). */
  readonly counts: { uncaughtException: number; unhandledRejection: number };
}

function describe(e: unknown): { error: string; stack?: string } {
  if (e instanceof Error) return { error: `${e.name}: ${e.message}`, stack: e.stack };
  try {
    return { error: typeof e === "string" ? e : JSON.stringify(e) ?? String(e) };
  } catch {
    return { error: String(e) };
  }
}

/** One JSON line on stdout (fd 1, where the Logger writes), written synchronously. */
export function writeFatalLine(msg: string, fields: Record<string, unknown>, fd = 1): void {
  const line = JSON.stringify({ time: new Date().toISOString(), level: "fatal", msg, pid: process.pid, ...fields }) + "\n";
  try {
    writeSync(fd, line);
  } catch {
    try {
      process.stderr.write(line);
    } catch {}
  }
}

export function installFatalHandlers(opts: { exit?: (code: number) => void; fd?: number } = {}): FatalHandlers {
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const counts = { uncaughtException: 0, unhandledRejection: 0 };
  let shutdown: (() => Promise<void>) | undefined;
  let exiting = false;

  const onRejection = (reason: unknown) => {
    counts.unhandledRejection++;
    writeFatalLine("unhandled promise rejection; the gateway keeps running", { kind: "unhandledRejection", ...describe(reason) }, opts.fd);
  };
  const onException = (err: unknown) => {
    counts.uncaughtException++;
    writeFatalLine("uncaught exception; stopping the gateway (exit 1)", { kind: "uncaughtException", ...describe(err) }, opts.fd);
    if (exiting) return exit(1); // a second one while stopping: no more waiting
    exiting = true;
    const stop = shutdown;
    if (!stop) return exit(1);
    stop().then(
      () => exit(1),
      (e) => {
        writeFatalLine("graceful stop after an uncaught exception failed", describe(e), opts.fd);
        exit(1);
      },
    );
  };
  process.on("unhandledRejection", onRejection);
  process.on("uncaughtException", onException);
  return {
    counts,
    setShutdown(fn) {
      shutdown = fn;
    },
    uninstall() {
      process.off("unhandledRejection", onRejection);
      process.off("uncaughtException", onException);
    },
  };
}
