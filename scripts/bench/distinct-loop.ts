/**
 * An open-ended closed loop of distinct questions in this process (cpu-per-request.ts and
 * gateway-profile.ts --distinct): `connections` keep-alive loops, each sending `body` with "{unique}"
 * replaced by a new question every request (questions.ts, a fresh seed per loop set), until stop().
 * The caller reads the completed count at the instants it samples the gateway's CPU (or profile), so
 * the requests counted and the CPU charged cover the same window. proxy-load.ts (loadDistinct) runs the
 * same loop in a process of its own and reports latencies over its own measuring window.
 */
import { questions } from "./questions";

export interface DistinctLoop {
  /** requests answered so far (any status) */
  done(): number;
  /** answers that were not 200, or failed */
  bad(): number;
  /** X-Cache-Status counts so far */
  cacheStatus(): Record<string, number>;
  /** end the loops (in-flight requests complete first) */
  stop(): Promise<void>;
}

/**
 * `onAnswer` (optional) sees every answer: its latency in ms (null when the request failed), whether it
 * was a 200, and its X-Cache-Status ("-" when absent).
 */
export function distinctLoop(
  url: string,
  headers: Record<string, string>,
  body: string,
  connections = 64,
  seed = Date.now() ^ (process.pid << 8),
  onAnswer?: (ms: number | null, ok: boolean, cacheStatus: string) => void,
): DistinctLoop {
  const q = questions(seed);
  let i = 0;
  let done = 0;
  let bad = 0;
  let stopped = false;
  const status: Record<string, number> = {};
  const loop = async () => {
    while (!stopped) {
      const request = body.replace("{unique}", q(i++));
      const t = performance.now();
      try {
        const r = await fetch(url, { method: "POST", headers, body: request });
        await r.arrayBuffer();
        if (r.status !== 200) bad++;
        const st = r.headers.get("x-cache-status") ?? "-";
        status[st] = (status[st] ?? 0) + 1;
        onAnswer?.(performance.now() - t, r.status === 200, st);
      } catch {
        bad++;
        onAnswer?.(null, false, "-");
      }
      done++;
    }
  };
  const loops = Array.from({ length: connections }, loop);
  return {
    done: () => done,
    bad: () => bad,
    cacheStatus: () => ({ ...status }),
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}
