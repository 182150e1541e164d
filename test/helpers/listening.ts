/**
 * A spawned svc on port 0 (SVC_SERVER__PORT=0) chooses its own port and says which in its
 * "svc listening" log line. Tests start processes that way: a port found free beforehand can be
 * taken by another test worker before the child binds it ("Is port … in use?", or the test talking
 * to that worker's server).
 */
import type { Subprocess } from "bun";

/** The URL of the first "svc listening" line in `log` (svc's JSON log lines), if there is one. */
export function listeningUrlIn(log: string): string | undefined {
  const line = log.split("\n").find((l) => l.includes('"svc listening"'));
  return line ? (JSON.parse(line) as { url: string }).url : undefined;
}

export interface Listening {
  /** the "svc listening" URL; undefined if stdout ended before that line (the child exited) */
  url: string | undefined;
  /** everything read from the child's stdout so far (reading goes on after `listening` returns) */
  log(): string;
  /** resolves once stdout has ended (the child exited), with everything it carried */
  ended: Promise<string>;
}

/**
 * Reads the child's stdout up to its "svc listening" line (and on until `until(log)` holds, e.g. a
 * later start-up line the test looks at) and returns the URL with the log read so far. The rest of
 * stdout keeps draining into `log()` / `ended`, so the child never blocks on a full pipe and a test
 * can still look at what the child wrote later. A child that neither gets there nor exits within
 * `timeoutMs` is killed.
 */
export async function listening(
  proc: Subprocess<any, "pipe", any>,
  timeoutMs = 45_000,
  until: (log: string) => boolean = () => true,
): Promise<Listening> {
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  let url: string | undefined;
  const deadline = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  let done = false;
  try {
    while (!(url && until(buffered))) {
      const r = await reader.read();
      if (r.done) {
        done = true;
        break;
      }
      buffered += decoder.decode(r.value, { stream: true });
      url ??= listeningUrlIn(buffered);
    }
  } finally {
    clearTimeout(deadline);
  }
  const ended = (async () => {
    while (!done) {
      const r = await reader.read();
      if (r.done) done = true;
      else buffered += decoder.decode(r.value, { stream: true });
    }
    return buffered;
  })().catch(() => buffered);
  return { url, log: () => buffered, ended };
}

/**
 * Reads the child's stdout up to its "svc listening" line and returns the URL; undefined if stdout
 * ended first (the child exited). The rest of stdout keeps draining, so the child never blocks on a
 * full pipe. A child that neither listens nor exits within `timeoutMs` is killed.
 */
export async function listeningUrl(proc: Subprocess<any, "pipe", any>, timeoutMs = 45_000): Promise<string | undefined> {
  return (await listening(proc, timeoutMs)).url;
}
