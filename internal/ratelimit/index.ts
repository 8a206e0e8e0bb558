export * from "./interface.ts";
export { gcra } from "./gcra.ts";
export { MemoryRateLimiter } from "./memory.ts";
export { RedisRateLimiter, type RedisLimiterOptions } from "./redis.ts";
