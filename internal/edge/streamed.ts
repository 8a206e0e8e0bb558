/**
 * The head of an answer streamed as it is made (NDJSON lines, server-sent
 * events): status 200, its type, never cached, and not held back by proxies.
 */
import { PassThrough } from "node:stream";
import type { FastifyReply } from "fastify";

/** Sends the head and returns the body to write the answer into. */
export function openStreamedAnswer(reply: FastifyReply, contentType: string): PassThrough {
  const body = new PassThrough();
  void reply
    .code(200)
    .header("content-type", `${contentType}; charset=utf-8`)
    .header("cache-control", "no-cache, no-store")
    // Proxies (nginx) must pass each piece on at once.
    .header("x-accel-buffering", "no")
    .send(body);
  return body;
}
