/**
 * The head of an answer streamed as it is made (NDJSON lines, server-sent
 * events): status 200, its type, never cached, and not held back by proxies.
 */
import { PassThrough } from "node:stream";
import type { FastifyReply } from "fastify";

/**
 * Sends the head and returns the body to write the answer into. The head
 * goes out at once, not with the first bytes of the body (which is how Node
 * sends a piped answer): a client following a job that has no event yet
 * sees its 200 and the headers without waiting for the first event.
 */
export function openStreamedAnswer(reply: FastifyReply, contentType: string): PassThrough {
  const body = new PassThrough();
  // Fastify sets the headers on the response, then pipes the body into it.
  reply.raw.once("pipe", () => {
    if (!reply.raw.headersSent) reply.raw.flushHeaders();
  });
  void reply
    .code(200)
    .header("content-type", `${contentType}; charset=utf-8`)
    .header("cache-control", "no-cache, no-store")
    // Proxies (nginx) must pass each piece on at once.
    .header("x-accel-buffering", "no")
    .send(body);
  return body;
}
