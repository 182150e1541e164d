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

/**
 * Reads the child's stdout up to its "svc listening" line and returns the URL; undefined if stdout
 * ended first (the child exited). The rest of stdout keeps draining, so the child never blocks on a
 * full pipe. A child that neither listens nor exits within `timeoutMs` is killed.
 */
export async function listeningUrl(proc: Subprocess<any, "pipe", any>, timeoutMs = 45_000): Promise<string | undefined> {
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  let url: string | undefined;
  const deadline = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  try {
    while (!url) {
      const { done, value } = await reader.read();
      if (done) break;
      buffered += decoder.decode(value, { stream: true });
      url = listeningUrlIn(buffered);
    }
  } finally {
    clearTimeout(deadline);
  }
  void (async () => {
    while (!(await reader.read()).done);
  })().catch(() => {});
  return url;
}
