/**
 * The Redis implementation of the hot-state ports (core/hotstate.ts), over Bun's built-in
 * RedisClient (no dependency). Two connections: one for commands (scripts by EVALSHA, EVAL on
 * NOSCRIPT, auto-pipelined), one for pub/sub. Both reconnect by themselves (backoff) when Redis
 * returns; while a connection is down, commands fail at once (offline queue off) so the domains
 * apply their fail mode instead of waiting, and the subscriber re-subscribes on reconnect.
 * Bus messages carry this replica's id: a replica applies its own messages synchronously at
 * publish (LocalBus semantics) and skips their echo.
 */
import { RedisClient } from "bun";
import type { RedisConfig } from "./config";
import { LocalBus, TOPICS, type Bus, type FailMode, type FailPolicy, type Script, type SharedStore, type Topic } from "./hotstate";
import type { Logger } from "./log";
import type { Counter } from "./metrics";

const CHANNEL = "bus";

interface Pending {
  at: number;
  reject: (e: Error) => void;
}

export class RedisHotState implements SharedStore, Bus {
  readonly bus = new LocalBus();
  private readonly cmd: RedisClient;
  private readonly sub: RedisClient;
  private readonly origin = crypto.randomUUID().slice(0, 8);
  private readonly channel: string;
  private subscribed = false;
  private closed = false;
  private lastLog = 0;
  private sinceLog = 0;
  /** scripts sent and not answered, oldest first */
  private readonly pending = new Set<Pending>();
  private readonly watchdog: ReturnType<typeof setInterval>;
  readonly fail: FailPolicy;

  constructor(
    readonly config: RedisConfig,
    private readonly log: Logger,
    degradedCounter: Counter,
  ) {
    const opts = { enableOfflineQueue: false, autoReconnect: true, maxRetries: 1_000_000_000, connectionTimeout: 2_000, enableAutoPipelining: true };
    this.cmd = new RedisClient(config.url, opts);
    this.sub = new RedisClient(config.url, opts);
    this.channel = `${config.prefix}${CHANNEL}`;
    this.cmd.onconnect = () => log.info("redis connected", { role: "commands" });
    this.cmd.onclose = (e) => this.closed || log.warn("redis connection lost (reconnecting)", { role: "commands", error: String(e) });
    this.sub.onconnect = () => void this.resubscribe();
    this.sub.onclose = (e) => this.closed || log.warn("redis connection lost (reconnecting)", { role: "bus", error: String(e) });
    // connect() waits until Redis answers; start-up does not (the fail mode applies meanwhile)
    this.cmd.connect().catch(() => {});
    this.sub.connect().catch(() => {});
    this.watchdog = setInterval(this.expire, Math.max(5, config.command_timeout_ms / 4));
    this.watchdog.unref?.();
    const mode: FailMode = config.fail_mode;
    this.fail = {
      mode,
      degraded: (kind, error) => {
        degradedCounter.inc({ kind, mode });
        this.sinceLog++;
        const now = Date.now();
        if (now - this.lastLog >= 1_000) {
          log.warn("decisions taken without redis", { mode, kind, count: this.sinceLog, error: String(error) });
          this.lastLog = now;
          this.sinceLog = 0;
        }
      },
    };
  }

  get connected() {
    return this.cmd.connected;
  }

  /** /ready: both connections up (limits need commands, invalidations need the subscriber) */
  ready(): boolean {
    return this.cmd.connected && this.sub.connected && this.subscribed;
  }

  run(s: Script, keys: string[], args: Array<string | number>): Promise<unknown> {
    const argv = [String(keys.length), ...keys, ...args.map(String)];
    return new Promise((resolve, reject) => {
      const entry: Pending = { at: performance.now(), reject };
      this.pending.add(entry);
      this.cmd
        .send("EVALSHA", [s.sha, ...argv])
        .catch((e) => {
          if (!String(e).includes("NOSCRIPT")) throw e;
          return this.cmd.send("EVAL", [s.src, ...argv]);
        })
        .then(
          (v) => {
            this.pending.delete(entry);
            resolve(v);
          },
          (e) => {
            this.pending.delete(entry);
            reject(e);
          },
        );
    });
  }

  /** One timer for every command (cheaper than one per command): a command older than the timeout fails. */
  private expire = () => {
    const limit = performance.now() - this.config.command_timeout_ms;
    for (const p of this.pending) {
      if (p.at > limit) break; // insertion order = age order
      this.pending.delete(p);
      p.reject(new Error(`redis did not answer within ${this.config.command_timeout_ms} ms`));
    }
  };

  /** a raw command (tests, tools) */
  send(command: string, args: string[]) {
    return this.cmd.send(command, args);
  }

  // ---- Bus ------------------------------------------------------------------------

  publish(topic: Topic, payload: string) {
    this.bus.deliver(topic, payload);
    if (!this.cmd.connected) {
      this.log.warn("invalidation not sent to other replicas: redis unreachable (their caches expire by TTL)", { topic });
      return;
    }
    this.cmd.publish(this.channel, `${this.origin}\u0000${topic}\u0000${payload}`).catch((e) => this.log.warn("invalidation publish failed", { topic, error: String(e) }));
  }

  subscribe(topic: Topic, handler: (payload: string) => void) {
    this.bus.subscribe(topic, handler);
  }

  private onMessage = (message: string) => {
    const a = message.indexOf("\u0000");
    const b = message.indexOf("\u0000", a + 1);
    if (a < 0 || b < 0 || message.slice(0, a) === this.origin) return;
    this.bus.deliver(message.slice(a + 1, b), message.slice(b + 1));
  };

  private async resubscribe() {
    try {
      // a reconnected client may keep its old listener: drop it first so a message is handled once
      const again = this.subscribed;
      if (again) await this.sub.unsubscribe(this.channel).catch(() => {});
      await this.sub.subscribe(this.channel, this.onMessage);
      this.subscribed = true;
      // messages published while the bus was down are lost: forget everything cached ("" = all)
      if (again) for (const topic of Object.values(TOPICS)) this.bus.deliver(topic, "");
      this.log.info("redis connected", { role: "bus" });
    } catch (e) {
      this.subscribed = false;
      this.log.warn("redis subscribe failed", { error: String(e) });
    }
  }

  close() {
    this.closed = true;
    clearInterval(this.watchdog);
    this.cmd.close();
    this.sub.close();
  }
}
