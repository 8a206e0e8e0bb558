/**
 * Structured logging (pino). Object first, message second; secrets are
 * redacted by path so a key can never reach a log line through a request dump.
 */
import { pino, type Logger, type LoggerOptions } from "pino";

export type { Logger };

/** Paths whose values never reach a log line. */
export const REDACT_PATHS = [
  "req.headers.authorization",
  "headers.authorization",
  "authorization",
  "key",
  "secret",
  "*.key",
  "*.secret",
  "apiKey",
  "*.apiKey",
  "password",
  "*.password",
];

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    base: { service: "folio" },
  };
}

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return destination ? pino(loggerOptions(level), destination) : pino(loggerOptions(level));
}
