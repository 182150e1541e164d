/**
 * A live upstream stream, forwarded to the client chunk by chunk (pull-based, no buffering) while
 * it is assembled on the side into the non-streamed body that the cache stores when the stream
 * completes normally. Only the leading event is held back, long enough for the style to add its
 * cache metadata (liveHead); a cut or stalled stream ends with the style's error frame and is
 * never cached.
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

export function liveStream(
  up: OpenUpstream,
  endpoint: Endpoint,
  call: ProxyCall,
  meta: CacheMeta,
  upstream: Upstream,
  timeoutMs: number,
  hooks: LiveStreamHooks,
): ReadableStream<Uint8Array> {
  const codec = endpoint.stream;
  const reader = up.response.body!.getReader();
  const asm = codec?.assembler(call);
  const parser = codec ? (codec.format === "sse" ? new SseParser() : codec.format === "json-array" ? new JsonArrayParser() : new NdjsonParser()) : undefined;
  const decoder = new TextDecoder();
  let head: HeldHead | undefined = codec?.liveHead ? new HeldHead(codec, call, meta) : undefined;
  const flushHead = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    if (!head) return;
    const rest = head.rest();
    head = undefined;
    if (rest) controller.enqueue(enc.encode(rest));
  };
  let finished = false;
  const finish = () => {
    finished = true;
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
              if (codec?.reframe && rest.length) controller.enqueue(enc.encode(rest.map((ev) => codec.reframe!(ev)).join("")));
              const body = asm?.result();
              finish();
              if (codec && body === undefined) {
                hooks.incomplete();
                if (codec.errorFrame) controller.enqueue(enc.encode(codec.errorFrame("upstream stream ended before completion")));
              } else if (body !== undefined) {
                await hooks.completed(body, endpoint.usageOf ? endpoint.usageOf(body) : { inputTokens: 0, outputTokens: 0 });
              }
              close();
              controller.close();
              return;
            }
            up.deadline.reset();
            const events = parser ? parser.push(decoder.decode(value, { stream: true })) : [];
            if (asm) for (const ev of events) asm.push(ev);
            if (codec?.reframe) {
              // the client's format differs from the provider's: re-encode event by event
              if (events.length === 0) continue;
              controller.enqueue(enc.encode(events.map((ev) => codec.reframe!(ev)).join("")));
              return;
            }
            if (!head) {
              controller.enqueue(value);
              return;
            }
            const ready = head.push(value);
            if (ready) {
              if (ready.decorated) head = undefined;
              controller.enqueue(enc.encode(ready.text));
              return;
            }
            // no complete event yet: read on (pull must enqueue before it returns)
          }
        } catch (e) {
          finish();
          close();
          const err = upstream.classify(endpoint.provider as ProviderName, e, up.deadline, timeoutMs);
          if (err instanceof ClientGone) return;
          flushHead(controller);
          if (codec?.errorFrame) {
            controller.enqueue(enc.encode(codec.errorFrame(err.message, err instanceof ApiError ? err.type : undefined)));
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
