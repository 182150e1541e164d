/**
 * An open-ended closed loop of distinct questions in this process (cpu-per-request.ts and
 * gateway-profile.ts --distinct): `connections` keep-alive loops, each sending `body` with "{unique}"
 * replaced by a new question every request (questions.ts, a fresh seed per loop set), until stop().
 * The caller reads the completed count at the instants it samples the gateway's CPU (or profile), so
 * the requests counted and the CPU charged cover the same window — proxy-load.ts (loadDistinct) runs
 * its own process and reports a window the caller cannot line up with its own readings.
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

export function distinctLoop(url: string, headers: Record<string, string>, body: string, connections = 64, seed = Date.now() ^ (process.pid << 8)): DistinctLoop {
  const q = questions(seed);
  let i = 0;
  let done = 0;
  let bad = 0;
  let stopped = false;
  const status: Record<string, number> = {};
  const loop = async () => {
    while (!stopped) {
      try {
        const r = await fetch(url, { method: "POST", headers, body: body.replace("{unique}", q(i++)) });
        await r.arrayBuffer();
        if (r.status !== 200) bad++;
        const st = r.headers.get("x-cache-status") ?? "-";
        status[st] = (status[st] ?? 0) + 1;
      } catch {
        bad++;
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
