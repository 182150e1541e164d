/**
 * Background upstream probes (readiness.probe_providers): each provider is probed every
 * probe_interval_secs, never more than one probe per provider at a time; /ready reads the cached
 * results, so a readiness poll never waits for or triggers an upstream call. A provider is reported
 * `down` only after probe_failures_before_down consecutive failures (one success brings it back
 * `up`), so one slow or failed probe does not flip the report; `unknown` until its first probe.
 */
import type { ReadinessConfig } from "./config";
import type { UpstreamProbe } from "./ports";

export interface UpstreamState {
  status: "unknown" | "up" | "down" | "error";
  checkedAt: string | null;
  latencyMs: number | null;
  httpStatus: number | null;
  consecutiveFailures: number;
  error: string | null;
}

export class UpstreamProbes {
  private readonly state = new Map<string, UpstreamState>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private running = new Set<string>();

  constructor(private readonly config: ReadinessConfig, private readonly probe: UpstreamProbe, private readonly now: () => number = Date.now) {
    for (const p of config.probe_providers)
      this.state.set(p, { status: "unknown", checkedAt: null, latencyMs: null, httpStatus: null, consecutiveFailures: 0, error: null });
  }

  get enabled(): boolean {
    return this.state.size > 0;
  }

  start() {
    if (!this.enabled || this.timer) return;
    void this.tick();
    this.timer = setInterval(() => void this.tick(), this.config.probe_interval_secs * 1000);
    this.timer.unref?.();
  }

  stop() {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Probe every configured provider once (a provider whose previous probe is still running is skipped). */
  async tick(): Promise<void> {
    await Promise.all([...this.state.keys()].map((p) => this.probeOne(p)));
  }

  private async probeOne(provider: string) {
    if (this.running.has(provider)) return;
    this.running.add(provider);
    try {
      const r = await this.probe.probe(provider, this.config.probe_timeout_ms);
      const prev = this.state.get(provider)!;
      const failures = r.status === "up" ? 0 : prev.consecutiveFailures + 1;
      // hysteresis: a failure is reported once it repeated; until then the previous status stands
      const status = r.status === "up" ? "up" : failures >= this.config.probe_failures_before_down ? r.status : prev.status === "unknown" ? "unknown" : prev.status;
      this.state.set(provider, {
        status,
        checkedAt: new Date(this.now()).toISOString(),
        latencyMs: r.latencyMs,
        httpStatus: r.httpStatus ?? null,
        consecutiveFailures: failures,
        error: r.error ?? null,
      });
    } finally {
      this.running.delete(provider);
    }
  }

  report(): Record<string, UpstreamState> {
    return Object.fromEntries([...this.state].map(([k, v]) => [k, { ...v }]));
  }

  /** require_upstream: ready while at least one probed provider is not down (unknown counts as not down). */
  ready(): boolean {
    if (!this.config.require_upstream || !this.enabled) return true;
    return [...this.state.values()].some((s) => s.status !== "down" && s.status !== "error");
  }
}
