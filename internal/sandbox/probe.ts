/**
 * Test-only probe mode of the sandbox program: reports what the sandbox can
 * see, write and reach, so tests can check the isolation from the inside.
 *
 * Harmless by construction: it lists directories (names only, at most 50),
 * writes a 5-byte marker that it deletes at once, and opens TCP connections
 * that it closes without sending anything. It is chosen by `probe` in
 * job.json, which only the host writes; no request field leads to it.
 */
import { readdir, rm, stat, writeFile } from "node:fs/promises";
import { createConnection } from "node:net";
import { join } from "node:path";
import type { ProbeReport, ProbeSpec } from "./interface.ts";

const CONNECT_TIMEOUT_MS = 2000;

export async function runProbe(spec: ProbeSpec): Promise<ProbeReport> {
  const report: ProbeReport = { uid: process.getuid?.() ?? -1, gid: process.getgid?.() ?? -1, read: [], write: [], connect: [] };
  for (const path of spec.read) {
    try {
      const s = await stat(path);
      const entries = s.isDirectory() ? (await readdir(path)).slice(0, 50) : undefined;
      report.read.push({ path, visible: true, ...(entries ? { entries } : {}) });
    } catch (err) {
      report.read.push({ path, visible: false, error: (err as NodeJS.ErrnoException).code ?? String(err) });
    }
  }
  for (const dir of spec.write) {
    const marker = join(dir, `.folio-probe-${process.pid}`);
    try {
      await writeFile(marker, "probe", { flag: "wx" });
      await rm(marker, { force: true });
      report.write.push({ path: dir, written: true });
    } catch (err) {
      report.write.push({ path: dir, written: false, error: (err as NodeJS.ErrnoException).code ?? String(err) });
    }
  }
  for (const { host, port } of spec.connect) {
    report.connect.push({ host, port, ...(await tryConnect(host, port)) });
  }
  return report;
}

function tryConnect(host: string, port: number): Promise<{ connected: boolean; error?: string }> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (outcome: { connected: boolean; error?: string }) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => done({ connected: false, error: "ETIMEDOUT" }), CONNECT_TIMEOUT_MS);
    socket.once("connect", () => done({ connected: true }));
    socket.once("error", (err: NodeJS.ErrnoException) => done({ connected: false, error: err.code ?? err.message }));
  });
}
