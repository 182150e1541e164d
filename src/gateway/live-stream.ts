/**
 * A live upstream stream, forwarded to the client chunk by chunk (pull-based, no buffering) while
 * it is assembled on the side into the non-streamed body that the cache stores when the stream
 * completes normally. Only the leading event is held back, long enough for the style to add its
 * cache metadata (liveHead); a cut or stalled stream ends with the style's error frame and is
 * never cached. A style with a framer (StreamCodec.framer) gets complete events only, re-encoded.
 *
 * Bounds: the wait for the next complete event (providers.<p>.stream_idle_ms, default timeout_ms)
 * — a chunk that completes no event is not progress, so a provider dripping bytes cannot hold the
 * stream — and the whole stream (stream_max_ms); either ends it with the style's error event.
 */
import { ApiError } from "../core/errors";
import type { CacheMeta, Endpoint, ProxyCall, StreamCodec, Usage } from "./providers/types";
import { SseParser, NdjsonParser, JsonArrayParser } from "./sse";
import { ClientGone, type OpenUpstream, type Upstream } from "./upstream";
import type { ProviderName } from "./providers";

const enc = new TextEncoder();

export interface LiveStreamHooks {
  /** the complete body arrived: store it (when cacheable) and record usage */
  completed(body: unknown, usage: Usage): Promise<void>;
  /** the stream ended before the style's completion marker */
  incomplete(): void;
  /** the stream is over, whatever the way (completed and accounted, failed, or cancelled by the client); called once */
  closed?(): void;
}

/** The leading bytes, held until the style's liveHead has decorated the first data event. */
class HeldHead {
  private text = "";
  private readonly decoder = new TextDecoder();
  constructor(private readonly codec: StreamCodec, private readonly call: ProxyCall, private readonly meta: CacheMeta) {}

  /**
   * Add a chunk. Returns the text that can go out now (events before the decorated one, and once
   * decorated everything held), with `decorated` when the head is done; undefined = keep reading.
   */
  push(chunk: Uint8Array): { text: string; decorated: boolean } | undefined {
    let text = this.text + this.decoder.decode(chunk, { stream: true });
    let out = "";
    for (;;) {
      const m = /\r?\n\r?\n/.exec(text);
      if (!m) {
        this.text = text;
        return out ? { text: out, decorated: false } : undefined;
      }
      const end = m.index + m[0].length;
      const event = new SseParser().push(text.slice(0, end))[0];
      const decorated = event ? this.codec.liveHead!(event.data, this.call, this.meta) : undefined;
      if (decorated !== undefined) {
        this.text = "";
        return { text: out + decorated + text.slice(end), decorated: true };
      }
      out += text.slice(0, end);
      text = text.slice(end);
    }
  }

  /** Whatever is still held (the stream ended or failed before a decorated event). */
  rest(): string {
    const rest = this.text + this.decoder.decode();
    this.text = "";
    return rest;
  }
}

/**
 * Text of a passed-through stream, cut at its last event boundary (SSE: a blank line; NDJSON: a
 * newline): the bytes after it wait for the rest of their event, so the client never holds half an
 * event when an error event follows (a cut, a timeout).
 */
class WholeEvents {
  private held = "";
  constructor(private readonly format: "sse" | "ndjson") {}
  push(text: string): string {
    const t = this.held + text;
    const cut = this.format === "ndjson" ? t.lastIndexOf("\n") + 1 : Math.max(endOf(t, "\n\n"), endOf(t, "\r\n\r\n"), endOf(t, "\r\r"));
    this.held = t.slice(cut);
    return cut === t.length ? t : t.slice(0, cut);
  }
  /** what is held (an unterminated last event), emptied */
  rest(): string {
    const r = this.held;
    this.held = "";
    return r;
  }
}

const endOf = (text: string, delimiter: string) => {
  const i = text.lastIndexOf(delimiter);
  return i < 0 ? 0 : i + delimiter.length;
};

export function liveStream(
  up: OpenUpstream,
  endpoint: Endpoint,
  call: ProxyCall,
  meta: CacheMeta,
  upstream: Upstream,
  // the provider's timeout_ms (unused: the stream's bounds are upstream.streamLimits)
  _timeoutMs: number,
  hooks: LiveStreamHooks,
): ReadableStream<Uint8Array> {
  const codec = endpoint.stream;
  const provider = endpoint.provider as ProviderName;
  const limits = upstream.streamLimits(provider);
  const framer = codec?.framer?.();
  const errorFrame = framer ? (message: string, type?: string) => framer.error(message, type) : codec?.errorFrame;
  // from here on the deadline is the wait for the next complete event
  up.deadline.reset(limits.idleMs);
  let overLong = false;
  const maxTimer =
    limits.maxMs > 0
      ? setTimeout(() => {
          overLong = true;
          up.deadline.expire();
        }, limits.maxMs)
      : undefined;
  const reader = up.response.body!.getReader();
  const asm = codec?.assembler(call);
  const parser = codec ? (codec.format === "sse" ? new SseParser() : codec.format === "json-array" ? new JsonArrayParser() : new NdjsonParser()) : undefined;
  const decoder = new TextDecoder();
  let head: HeldHead | undefined = codec?.liveHead ? new HeldHead(codec, call, meta) : undefined;
  // a stream forwarded as the provider sent it goes out in whole events
  const whole = codec && !framer && !codec.reframe && codec.format !== "json-array" ? new WholeEvents(codec.format) : undefined;
  /** send text (through `whole`); false when nothing could go out yet */
  const send = (controller: ReadableStreamDefaultController<Uint8Array>, text: string): boolean => {
    const t = whole ? whole.push(text) : text;
    if (t) controller.enqueue(enc.encode(t));
    return t.length > 0;
  };
  const flushHead = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    if (!head) return;
    const rest = head.rest();
    head = undefined;
    if (rest) send(controller, rest);
  };
  let finished = false;
  const finish = () => {
    finished = true;
    clearTimeout(maxTimer);
    up.release();
  };
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    hooks.closed?.();
  };
  return new ReadableStream<Uint8Array>(
    {
      pull: async (controller) => {
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) {
              flushHead(controller);
              const rest = parser ? parser.end() : [];
              if (asm) for (const ev of rest) asm.push(ev);
              if (framer && rest.length) controller.enqueue(enc.encode(rest.map((ev) => framer.event(ev)).join("")));
              else if (codec?.reframe && rest.length) controller.enqueue(enc.encode(rest.map((ev) => codec.reframe!(ev)).join("")));
              const body = asm?.result();
              finish();
              // an unterminated last event goes out when the stream completed; a failed one's is dropped before the error event
              const tail = whole?.rest();
              if (tail && body !== undefined) controller.enqueue(enc.encode(tail));
              if (codec && body === undefined) {
                hooks.incomplete();
                if (errorFrame) controller.enqueue(enc.encode(errorFrame("upstream stream ended before completion")));
              } else if (body !== undefined) {
                await hooks.completed(body, endpoint.usageOf ? endpoint.usageOf(body) : { inputTokens: 0, outputTokens: 0 });
                if (framer) controller.enqueue(enc.encode(framer.end()));
              }
              close();
              controller.close();
              return;
            }
            const text = parser ? decoder.decode(value, { stream: true }) : "";
            const events = parser ? parser.push(text) : [];
            // progress is a complete event (any chunk, for a stream svc does not parse)
            if (!parser || events.length) up.deadline.reset();
            if (asm) for (const ev of events) asm.push(ev);
            if (framer) {
              const out = events.map((ev) => framer.event(ev)).join("");
              if (!out) continue;
              controller.enqueue(enc.encode(out));
              return;
            }
            if (codec?.reframe) {
              // the client's format differs from the provider's: re-encode event by event
              if (events.length === 0) continue;
              controller.enqueue(enc.encode(events.map((ev) => codec.reframe!(ev)).join("")));
              return;
            }
            if (!head) {
              if (!whole) {
                controller.enqueue(value);
                return;
              }
              if (send(controller, text)) return;
              continue;
            }
            const ready = head.push(value);
            if (ready) {
              if (ready.decorated) head = undefined;
              if (send(controller, ready.text)) return;
            }
            // no complete event yet: read on (pull must enqueue before it returns)
          }
        } catch (e) {
          finish();
          close();
          let err = upstream.classify(provider, e, up.deadline, limits.idleMs);
          if (err instanceof ClientGone) return;
          if (up.deadline.timedOut)
            err = new ApiError(
              "timeout_error",
              overLong
                ? `upstream ${provider} stream lasted longer than ${limits.maxMs} ms (providers.${provider}.stream_max_ms)`
                : `upstream ${provider} did not answer within ${limits.idleMs} ms (no complete stream event)`,
            );
          flushHead(controller);
          if (errorFrame) {
            controller.enqueue(enc.encode(errorFrame(err.message, err instanceof ApiError ? err.type : undefined)));
            controller.close();
          } else controller.error(err);
        }
      },
      cancel: (reason) => {
        if (!finished) {
          up.deadline.abort(new ClientGone(String(reason ?? "client disconnected")));
          reader.cancel().catch(() => {});
          finish();
        }
        close();
      },
    },
    { highWaterMark: 0 },
  );
}
