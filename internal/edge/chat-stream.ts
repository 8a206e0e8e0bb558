/**
 * A chat completion streamed (`stream: true`): OpenAI's
 * `chat.completion.chunk` objects over server-sent events, ending with
 * `data: [DONE]` (docs/ocr.md, Streaming).
 *
 * Billing is the answer in one piece's (`runPaid`): the hold is taken before
 * the first byte, and the request is settled once, when the stream ends, from
 * what the provider reported (a local engine: the pages read), with one usage
 * row. What can end a stream early, and what it is charged:
 *
 * - an error inside the provider's stream: the error event, and what the
 *   provider reported it billed until then;
 * - the client going away (no Idempotency-Key): the provider's call is
 *   cancelled, and the request is charged what the provider's own record of
 *   the generation says (OpenRouter's generation stats), or the pages a local
 *   engine had read, never more than the hold;
 * - the client going away under an Idempotency-Key: the work runs to its end
 *   and its answer is kept, so the retry the key is for gets the whole stream
 *   (docs/idempotency.md).
 *
 * A refusal before the first byte (validation, 402, an upstream error before
 * any text) stays a plain HTTP error with its status.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { chargeFields, runPaid, sumCharges, type ComponentCharge, type Meter, type MeteredComponents, type PaidOutcome, type PaidRequest, type Payer } from "../billing/index.ts";
import type { ChatInput, ChatStreamEnd } from "../contracts/index.ts";
import { FolioError, toHttpError } from "../platform/errors/index.ts";
import { idempotent } from "./idempotency.ts";
import { extractionOf } from "./services.ts";
import { DONE, SseStream, sseEvent } from "./sse.ts";
import type { EdgeDeps } from "./types.ts";

const ENDPOINT = "/v1/chat/completions";

/** The `folio` cost extension, the same in the answer in one piece and in the stream's usage chunk. */
export const FolioCost = Type.Object({
  provider_cost_cents: Type.Number(),
  platform_fee_cents: Type.Number(),
  conversion_cost_cents: Type.Number(),
  total_cost_cents: Type.Number(),
  pages_processed: Type.Integer(),
});

/** The `folio` fields of a charge. */
export function folioCost(charge: ComponentCharge, components: MeteredComponents, pages: number) {
  return {
    ...chargeFields(charge),
    conversion_cost_cents: sumCharges(components.conversion).chargedCents,
    pages_processed: pages,
  };
}

const Usage = Type.Object({ prompt_tokens: Type.Integer(), completion_tokens: Type.Integer(), total_tokens: Type.Integer() });

/** One event of the stream, as the OpenAPI document states it. */
export const ChatChunk = Type.Union([
  Type.Object(
    {
      id: Type.String({ description: "req_<id>, the usage log entry's id; the same in every chunk." }),
      object: Type.Literal("chat.completion.chunk"),
      created: Type.Integer(),
      model: Type.String(),
      choices: Type.Array(
        Type.Object({
          index: Type.Integer(),
          delta: Type.Object({ role: Type.Optional(Type.Literal("assistant")), content: Type.Optional(Type.String()) }),
          finish_reason: Type.Union([Type.String(), Type.Null()]),
        }),
        { description: "One entry; empty in the usage chunk." },
      ),
      usage: Type.Optional(Type.Union([Usage, Type.Null()], { description: "With stream_options.include_usage: null, except in the last chunk before [DONE]." })),
      folio: Type.Optional(FolioCost),
    },
    { description: "data: <chunk>" },
  ),
  Type.Object({ error: Type.Ref("Error") }, { description: "data: {error} — the stream failed after it began; `data: [DONE]` follows." }),
]);

export interface StreamedChat {
  payer: Payer;
  model: string;
  estimateCents: number;
  includeUsage: boolean;
  /** Pages the provider's PDF parser reads (billed when the provider answered). */
  parserPages: number;
  /** Pages sent to the model, once the chat's input is built. */
  pagesSent: () => number;
  /** Builds the chat inside the paid work (conversions, page images, the raised hold). */
  chatInput: (req: PaidRequest, signal: AbortSignal) => Promise<ChatInput>;
}

/** Runs a streamed chat start to finish; the reply is the stream (or a plain error before its first byte). */
export async function streamChat(deps: EdgeDeps, req: FastifyRequest, reply: FastifyReply, chat: StreamedChat): Promise<FastifyReply> {
  const sse = new SseStream(reply, deps.sseKeepAliveMs);
  const chunks = new Chunks(chat.model, chat.includeUsage);
  // A client that goes away stops the work, unless its Idempotency-Key promises it the answer on a retry.
  const cancel = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished && !req.idempotency) cancel.abort(new FolioError("invalid_request", "the client closed the connection during the stream; the work was cancelled"));
  };
  reply.raw.on("close", onClose);
  let meter: Meter | undefined;
  /** The last events of a failed stream as kept for its key, with the code they report. */
  let failure: { code: string; events: string } | undefined;
  try {
    const outcome = await runPaid(
      deps.billing,
      chat.payer,
      {
        endpoint: ENDPOINT,
        model: chat.model,
        estimateCents: chat.estimateCents,
        answer: (o: PaidOutcome<ChatStreamEnd>) => chunks.finish(o.result.finishReason || "stop", usageOf(o.result), folioCost(o.charge, o.components, chat.pagesSent())),
        // What a replay repeats: every event the client got, in order.
        ...idempotent(deps, req, reply, (tail) => sse.transcript() + String(tail)),
        failureAnswer: ({ status, body, charge }) => {
          if (!sse.open) return { status, body: JSON.stringify(body) };
          const events = chunks.failure(body, meter ? { usage: usageOf(meter), folio: folioCost(charge, meter.components(), meter.pages) } : undefined);
          failure = { code: errorCodeOf(body), events };
          return { status: 200, body: sse.transcript() + events };
        },
        capFailureAtHold: true,
      },
      async (paid) => {
        meter = paid.meter;
        chunks.id = paid.requestId;
        // From here on the work may be slow (conversion, a page, a provider thinking): silence gets keep-alives.
        sse.keepAlive();
        try {
          return await relay(deps, paid, chat, sse, chunks, cancel.signal);
        } finally {
          // Whatever follows (the settlement, then the last events) is written at once.
          sse.stopKeepAlive();
        }
      },
    );
    sse.end(outcome.answer);
    return reply;
  } catch (err) {
    sse.stopKeepAlive();
    if (!sse.open) throw err;
    // The stream has begun (200 sent): the error is its last event, in the one error shape.
    const mapped = toHttpError(err);
    if (mapped.body.error.code === "internal_error") req.log.error({ err }, "request failed");
    else if (mapped.status >= 500) req.log.warn({ code: mapped.body.error.code, msg: mapped.body.error.message }, "streamed request failed");
    // The events kept for the key, unless the settlement itself failed after them (then nothing was charged).
    sse.end(failure?.code === mapped.body.error.code ? failure.events : chunks.failure(mapped.body, undefined));
    return reply;
  } finally {
    reply.raw.off("close", onClose);
  }
}

/**
 * Relays the extraction service's stream to the client and meters it: the
 * end's usage and cost when the stream ends; when it is cut before its end,
 * what was billed until then.
 */
async function relay(deps: EdgeDeps, paid: PaidRequest, chat: StreamedChat, sse: SseStream, chunks: Chunks, signal: AbortSignal): Promise<ChatStreamEnd> {
  const extraction = extractionOf(deps);
  const input = await chat.chatInput(paid, signal);
  const cut = { generationId: "", pages: [] as ChatStreamEnd["providerCostCents"][] };
  let end: ChatStreamEnd | undefined;
  try {
    for await (const e of extraction.chatStream(input, signal)) {
      if (e.kind === "end") {
        end = e;
        continue;
      }
      if (e.generationId) cut.generationId = e.generationId;
      if (e.page) cut.pages.push(e.page.providerCostCents);
      sse.send(chunks.delta(e.content));
    }
  } catch (err) {
    await meterCut(deps, paid.meter, chat, cut);
    throw err;
  }
  if (!end) throw new FolioError("internal_error", "the extraction service's stream ended without its end");
  // A stream that failed is charged what the provider billed: nothing (not the minimum charge) when it billed nothing.
  if (!end.error || end.providerCostCents.gt(0)) {
    paid.meter.modelCall(end.providerCostCents, { prompt: end.promptTokens, completion: end.completionTokens });
    if (chat.parserPages) paid.meter.parserPages(chat.parserPages);
  }
  paid.meter.pages = chat.pagesSent();
  if (end.error) {
    // The provider failed inside its stream: charged what it reported billing until then.
    throw new FolioError("upstream_error", end.error.message, { retryable: true, extra: end.error.extra });
  }
  return end;
}

/**
 * Meters a stream cut before its end (the client went away, the extraction
 * service died): a local engine's pages already read, each at its cost; an
 * upstream generation at what the provider's record of it says (nothing when
 * there is none, or the stream had not begun: Folio's loss, not the client's).
 */
async function meterCut(deps: EdgeDeps, meter: Meter, chat: StreamedChat, cut: { generationId: string; pages: ChatStreamEnd["providerCostCents"][] }): Promise<void> {
  if (cut.pages.length) {
    for (const cost of cut.pages) meter.modelCall(cost);
    meter.pages = cut.pages.length;
    return;
  }
  if (!cut.generationId) return;
  try {
    const r = await extractionOf(deps).generationCost(chat.model, cut.generationId);
    if (!r.found || !r.providerCostCents.gt(0)) return;
    meter.modelCall(r.providerCostCents, { prompt: r.promptTokens, completion: r.completionTokens });
    meter.pages = chat.pagesSent();
  } catch (err) {
    deps.log.warn({ err, generation: cut.generationId }, "the cost of a cut stream could not be looked up; not charged");
  }
}

function errorCodeOf(body: unknown): string {
  const error = typeof body === "object" && body !== null ? (body as { error?: { code?: unknown } }).error : undefined;
  return typeof error?.code === "string" ? error.code : "";
}

function usageOf(u: { promptTokens: number; completionTokens: number }) {
  return { prompt_tokens: u.promptTokens, completion_tokens: u.completionTokens, total_tokens: u.promptTokens + u.completionTokens };
}

/** The stream's events: the same id, creation time and model in every chunk. */
class Chunks {
  id = "";
  private readonly created = Math.floor(Date.now() / 1000);
  private first = true;

  constructor(
    private readonly model: string,
    private readonly includeUsage: boolean,
  ) {}

  /** A piece of the answer (the first also names the role). */
  delta(content: string) {
    const delta = this.first ? { role: "assistant" as const, content } : { content };
    this.first = false;
    return this.chunk([{ index: 0, delta, finish_reason: null }]);
  }

  /** The last events of a stream that ended well: the finish reason, the usage chunk when asked for, [DONE]. */
  finish(finishReason: string, usage: ReturnType<typeof usageOf>, folio: ReturnType<typeof folioCost>): string {
    return sseEvent(this.chunk([{ index: 0, delta: this.first ? { role: "assistant", content: "" } : {}, finish_reason: finishReason }])) + this.usageEvent(usage, folio) + sseEvent(DONE);
  }

  /** The last events of a stream that failed: the usage chunk (what was charged) when asked for, the error, [DONE]. */
  failure(body: unknown, charged: { usage: ReturnType<typeof usageOf>; folio: ReturnType<typeof folioCost> } | undefined): string {
    const error = typeof body === "object" && body !== null && "error" in body ? (body as { error: unknown }).error : body;
    return (charged ? this.usageEvent(charged.usage, charged.folio) : "") + sseEvent({ error }) + sseEvent(DONE);
  }

  private usageEvent(usage: ReturnType<typeof usageOf>, folio: ReturnType<typeof folioCost>): string {
    if (!this.includeUsage) return "";
    return sseEvent({ ...this.head(), choices: [], usage, folio });
  }

  private chunk(choices: unknown[]) {
    return { ...this.head(), choices, ...(this.includeUsage ? { usage: null } : {}) };
  }

  private head() {
    return { id: this.id, object: "chat.completion.chunk" as const, created: this.created, model: this.model };
  }
}
