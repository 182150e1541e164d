/** What ops needs from other domains: a probe of one upstream provider (the gateway implements it). */
export interface UpstreamProbe {
  /** the providers that can be probed */
  providers: readonly string[];
  probe(provider: string, timeoutMs: number): Promise<{ status: "up" | "down" | "error"; httpStatus?: number; latencyMs: number; error?: string }>;
}
