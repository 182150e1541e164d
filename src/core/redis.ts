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
import { LocalBus, TOPICS, type Bus, type FailMode, type FailPolicy, type Script, type SharedLog, type SharedStore, type Topic } from "./hotstate";
import type { Logger } from "./log";
import type { Counter } from "./metrics";

const CHANNEL = "bus";

/** a followed stream: its key, this replica's position (last id read; null = not yet placed at the end) */
interface Follower {
  key: string;
  pos: string | null;
  /** pos is where the follower began (shortly before follow(), FOLLOW_CATCH_UP_MS), not an entry read yet */
  initial: boolean;
  handler: (payload: string, appendedAt: number) => void;
  resync: () => void;
}

/**
 * A new follower starts this long before follow() was called, not at the stream's end: the reader
 * connects and positions asynchronously, and a replica may load state from the database meanwhile —
 * a change appended in that window was skipped (a cache-feedback test lost a verdict 1 run in 4 on a
 * loaded machine). Replaying a few seconds is safe (every change applies idempotently); the margin
 * also covers this host's clock running ahead of Redis's by up to that much.
 */
const FOLLOW_CATCH_UP_MS = 10_000;

interface Pending {
  at: number;
  reject: (e: Error) => void;
}

export class RedisHotState implements SharedStore, Bus, SharedLog {
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
  /** streams followed (SharedLog), read by one blocking XREAD on a third connection */
  private readonly follows: Follower[] = [];
  private reader?: RedisClient;

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
    return this.cmd.connected && this.sub.connected && this.subscribed && (this.follows.length === 0 || (!!this.reader?.connected && this.follows.every((f) => f.pos !== null)));
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

  // ---- SharedLog ------------------------------------------------------------------

  follow(stream: string, handler: (payload: string, appendedAt: number) => void, resync: () => void) {
    this.follows.push({ key: `${this.config.prefix}${stream}`, pos: `${Math.max(0, Date.now() - FOLLOW_CATCH_UP_MS)}-0`, initial: true, handler, resync });
    if (this.follows.length === 1) void this.readLoop();
  }

  /** this replica's position in a followed stream (tests) */
  position(stream: string): string | null {
    return this.follows.find((f) => f.key === `${this.config.prefix}${stream}`)?.pos ?? null;
  }

  /**
   * One blocking XREAD over every followed stream, on its own connection (a blocked connection
   * cannot carry other commands). A stream is first read from shortly before follow() was called
   * (FOLLOW_CATCH_UP_MS). After a connection loss
   * the reader goes on from its position when that entry is still in the stream, so nothing is
   * skipped or read twice; when it is gone (Redis restarted, flushed, or the stream trimmed past
   * it), entries may have been missed: the follower resyncs and starts again at the end.
   */
  private async readLoop() {
    let r: RedisClient | undefined;
    let fresh = true;
    while (!this.closed) {
      try {
        if (!r?.connected) {
          r?.close();
          r = this.reader = new RedisClient(this.config.url, { enableOfflineQueue: false, autoReconnect: false, connectionTimeout: 2_000, enableAutoPipelining: false });
          await r.connect();
          fresh = true;
        }
        if (fresh) {
          for (const f of this.follows) {
            // not an entry yet: read on from where it began (see FOLLOW_CATCH_UP_MS)
            if (f.initial) continue;
            if (f.pos !== null && f.pos !== "0-0") {
              const still = (await r.send("XRANGE", [f.key, f.pos, f.pos])) as unknown[];
              if (still.length) continue;
            }
            const tail = (await r.send("XREVRANGE", [f.key, "+", "-", "COUNT", "1"])) as Array<[string, unknown]>;
            const had = f.pos !== null;
            f.pos = tail[0]?.[0] ?? "0-0";
            if (had) f.resync();
          }
          fresh = false;
        }
        const got = await r.send("XREAD", ["COUNT", "500", "BLOCK", "1000", "STREAMS", ...this.follows.map((f) => f.key), ...this.follows.map((f) => f.pos!)]);
        if (!got) continue;
        // RESP3 answers a map {stream: entries}; RESP2 an array of [stream, entries]
        const byKey = Array.isArray(got) ? Object.fromEntries(got as Array<[string, unknown]>) : (got as Record<string, unknown>);
        for (const f of this.follows) {
          for (const [id, fields] of (byKey[f.key] ?? []) as Array<[string, string[]]>) {
            f.pos = id;
            f.initial = false;
            const i = fields.indexOf("p");
            try {
              // an entry id is "<ms>-<seq>", the ms of Redis's clock at XADD
              if (i >= 0) f.handler(fields[i + 1]!, Number(id.slice(0, id.indexOf("-"))));
            } catch (e) {
              this.log.warn("stream entry not applied", { stream: f.key, id, error: String(e) });
            }
          }
        }
      } catch (e) {
        if (this.closed) break;
        if (!fresh) this.log.warn("redis stream reader lost its connection (reconnecting)", { error: String(e) });
        fresh = true;
        r?.close();
        r = undefined;
        await Bun.sleep(200);
      }
    }
  }

  close() {
    this.closed = true;
    this.reader?.close();
    clearInterval(this.watchdog);
    this.cmd.close();
    this.sub.close();
  }
}
