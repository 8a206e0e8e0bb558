/**
 * The `unsandboxed` backend: development only. Runs the sandbox program's
 * converter directly on the host, in a private temporary folder, with the
 * same prepared profile and its security settings, but with none of the
 * sandbox's isolation (the document is opened with this process's rights,
 * network and file system). Never chosen unless configured explicitly, and
 * it logs a warning on every document.
 */
import { randomUUID } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "../platform/log/index.ts";
import { runJob } from "./converter.ts";
import type { SandboxBackend, SandboxInput, SandboxResult } from "./interface.ts";
import { DEFAULT_MAX_OUTPUT_BYTES, checkInput, readOutput, resultError, writeJob } from "./jobdir.ts";
import { prepareProfile } from "./profile.ts";

export interface UnsandboxedBackendOptions {
  /** Warned on every document. */
  logger: Pick<Logger, "warn">;
  /** Where the profile and job folders go. Default `<tmpdir>/folio-unsandboxed-<uid>`. */
  workDir?: string;
  maxOutputBytes?: number;
}

export class UnsandboxedBackend implements SandboxBackend {
  readonly workDir: string;
  private profile: Promise<string> | undefined;

  constructor(private readonly options: UnsandboxedBackendOptions) {
    this.workDir = options.workDir ?? join(tmpdir(), `folio-unsandboxed-${process.getuid?.() ?? 0}`);
  }

  prepare(): Promise<string> {
    this.profile ??= (async () => {
      const dir = join(this.workDir, "profile");
      await mkdir(this.workDir, { recursive: true, mode: 0o700 });
      await prepareProfile(dir);
      return dir;
    })().catch((err: unknown) => {
      this.profile = undefined;
      throw err;
    });
    return this.profile;
  }

  async convert(input: SandboxInput, signal?: AbortSignal): Promise<SandboxResult> {
    checkInput(input);
    this.options.logger.warn(
      { backend: "unsandboxed", format: input.format, bytes: input.document.length },
      "converting a document WITHOUT a sandbox (FOLIO_SANDBOX=unsandboxed is for development only)",
    );
    signal?.throwIfAborted();
    const profileDir = await this.prepare();
    const base = join(this.workDir, "jobs", randomUUID());
    const jobDir = join(base, "job");
    const maxOutputBytes = this.options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    try {
      await writeJob(jobDir, input, { profileDir, timeoutMs: input.timeoutMs, maxOutputBytes }, { chownOutput: false });
      const started = performance.now();
      const result = await runJob(jobDir, { scratchDir: base, ...(signal ? { signal } : {}) });
      const computeMillis = Math.round(performance.now() - started);
      signal?.throwIfAborted();
      if (!result.ok) throw resultError(result);
      return { ...(await readOutput(jobDir, result, input, maxOutputBytes)), computeMillis };
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  }
}
