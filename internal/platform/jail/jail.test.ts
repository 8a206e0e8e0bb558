/**
 * The parser jail with the real bubblewrap (skipped, saying so, where it is
 * not installed): what a jailed program can reach of the network, the
 * files and the limits, and that the jailed tree pauses as one. bash plays
 * the taken-over parser.
 */
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { checkParserJail, JAIL_LIMITS, jailed, jailGone, parserJail, signalJailed, startParserJail, useParserJail, type JailAccess } from "./index.ts";
import { bwrapInstalled } from "../../../test/support.ts";


/** Runs `bash -c script` jailed (or not), with an environment of its own; resolves with its exit code and output. */
function run(script: string, access: JailAccess = {}, mode: "bwrap" | "none" = "bwrap"): Promise<{ code: number; out: string }> {
  // --norc: bash reads ~/.bashrc when its stdin is a socket (as Node's pipes are), taking it for a remote shell.
  const j = jailed("bash", ["--norc", "-c", script], access, mode);
  return new Promise((resolve) => {
    execFile(j.command, j.args, { env: { PATH: "/usr/bin:/bin", ...j.env }, encoding: "utf8", timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number(err.code ?? -1) : 0, out: `${stdout}${stderr}` });
    });
  });
}

describe.skipIf(!bwrapInstalled)("the bubblewrap parser jail", () => {
  const work = mkdtempSync(join(tmpdir(), "folio-jail-test-"));
  let server: Server;
  let port: number;
  beforeAll(async () => {
    server = createServer((s) => s.end("hello from the host\n"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    rmSync(work, { recursive: true, force: true });
  });

  it("works here (the start check passes)", async () => {
    await expect(checkParserJail("bwrap")).resolves.toBeUndefined();
  });

  it("has no network: the host's loopback server answers outside and not inside", async () => {
    const connect = `exec 3<>/dev/tcp/127.0.0.1/${port} && head -1 <&3`;
    const outside = await run(connect, {}, "none");
    expect(outside, "the control: unjailed it connects").toEqual({ code: 0, out: "hello from the host\n" });
    const inside = await run(connect);
    expect(inside.code, inside.out).not.toBe(0);
    expect(inside.out).not.toContain("hello from the host");
    const links = await run("ls /sys/class/net 2>/dev/null || cat /proc/net/dev");
    expect(links.out, "only its own loopback").not.toMatch(/eth|ens|veth|wl/);
  });

  it("sees a read-only system and none of the host's other files; /tmp is its own", async () => {
    const marker = join(tmpdir(), `folio-jail-marker-${process.pid}`);
    writeFileSync(marker, "host");
    try {
      const r = await run(
        [
          "touch /usr/x 2>/dev/null && echo usr-writable",
          "for p in /root /home /work /var/run/secrets /etc/passwd " + process.cwd() + " " + marker + "; do test -e $p && echo sees:$p; done",
          "touch /tmp/own && echo tmp-writable",
          "ls /tmp",
        ].join("; "),
      );
      expect(r.out.trim().split("\n"), r.out).toEqual(["tmp-writable", "own"]);
    } finally {
      rmSync(marker, { force: true });
    }
  });

  it("sees the paths it is given: a folder to write, a file to read only", async () => {
    const dir = join(work, "out");
    const doc = join(work, "document.pdf");
    execFileSync("mkdir", ["-p", dir]);
    writeFileSync(doc, "%PDF-1.4");
    const r = await run(`head -c 8 ${doc}; echo; echo page > ${dir}/page-1.pgm; { echo x >> ${doc}; } 2>/dev/null || echo doc-read-only`, { read: [doc], write: [dir] });
    expect(r.out.trim().split("\n"), r.out).toEqual(["%PDF-1.4", "doc-read-only"]);
    expect(readFileSync(join(dir, "page-1.pgm"), "utf8")).toBe("page\n");
  });

  it("runs under the limits: address space, file size, processes, CPU seconds, no core", async () => {
    const r = await run("ulimit -v; ulimit -f; ulimit -u; ulimit -t; ulimit -c");
    // bash reports -v and -f in KiB (-f in 1024-byte blocks).
    expect(r.out.trim().split("\n")).toEqual([
      String(JAIL_LIMITS.addressSpaceBytes / 1024),
      String(JAIL_LIMITS.fileBytes / 1024),
      String(JAIL_LIMITS.processes),
      String(JAIL_LIMITS.cpuSeconds),
      "0",
    ]);
    const big = await run(`head -c ${JAIL_LIMITS.fileBytes + 1024} /dev/zero > ${work}/big`, { write: [work] });
    expect(big.code, "a file past the size limit is refused").not.toBe(0);
    expect(statSync(join(work, "big")).size).toBeLessThanOrEqual(JAIL_LIMITS.fileBytes);
  });

  it("gets only the environment it is given", async () => {
    const j = jailed("bash", ["--norc", "-c", "env | sort"], {}, "bwrap");
    const out = execFileSync(j.command, j.args, { env: { PATH: "/usr/bin:/bin", LANG: "C.UTF-8", ...j.env }, encoding: "utf8" });
    expect(out.trim().split("\n").map((l) => l.split("=")[0]), out).toEqual(["HOME", "LANG", "PATH", "PWD", "SHLVL", "TMPDIR", "_"]);
  });

  it("jailGone waits until the jailed program is gone too, after its bwrap was killed", async () => {
    const j = jailed("sleep", ["30"], {}, "bwrap");
    const child = execFile(j.command, j.args, { env: { PATH: "/usr/bin:/bin", ...j.env } });
    const pid = child.pid!;
    await until(() => groupAlive(pid) && childrenOf(pid) > 0);
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL"); // bwrap only, as an abort does
    await exited;
    await jailGone(pid);
    expect(groupAlive(pid)).toBe(false);
  });

  it("pauses and resumes as one process group, the jailed program included", async () => {
    const file = join(work, "ticks");
    writeFileSync(file, "");
    const j = jailed("bash", ["--norc", "-c", `while :; do echo t >> ${file}; sleep 0.02; done`], { write: [work] }, "bwrap");
    const child = execFile(j.command, j.args, { env: { PATH: "/usr/bin:/bin", ...j.env } });
    const size = () => statSync(file).size;
    try {
      await until(() => size() > 0);
      expect(signalJailed(child, j.detached, "SIGSTOP")).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const stopped = size();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(size(), "nothing written while paused").toBe(stopped);
      signalJailed(child, j.detached, "SIGCONT");
      await until(() => size() > stopped);
    } finally {
      signalJailed(child, j.detached, "SIGKILL");
    }
    await until(() => child.exitCode !== null || child.signalCode !== null);
  });

  it("is not used with `none`: the command runs as it is", () => {
    expect(jailed("pdfinfo", ["-f", "1", "x.pdf"], { read: ["x.pdf"] }, "none")).toEqual({ command: "pdfinfo", args: ["-f", "1", "x.pdf"], env: {}, detached: false });
  });
});

describe("choosing the process's jail at start (FOLIO_PARSER_JAIL)", () => {
  afterEach(() => useParserJail("none"));
  const cannot = () => Promise.reject(new Error("configuration: FOLIO_PARSER_JAIL=bwrap: bubblewrap cannot run a jail here (bwrap: No permissions to create new namespace); install bubblewrap and allow user namespaces, or set FOLIO_PARSER_JAIL=none"));

  it("auto takes bwrap where it runs, without a warning", async () => {
    const warnings: string[] = [];
    expect(await startParserJail("auto", (m) => warnings.push(m), () => Promise.resolve())).toBe("bwrap");
    expect(parserJail()).toBe("bwrap");
    expect(warnings).toEqual([]);
  });

  it("auto falls back to none where bwrap cannot run, and says why in a warning", async () => {
    const warnings: string[] = [];
    expect(await startParserJail("auto", (m) => warnings.push(m), cannot)).toBe("none");
    expect(parserJail()).toBe("none");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/FOLIO_PARSER_JAIL=auto: the parsers of client bytes run without a jail .*No permissions to create new namespace.*set FOLIO_PARSER_JAIL=bwrap to require the jail$/);
  });

  it("bwrap that cannot run stops the start; none checks nothing", async () => {
    await expect(startParserJail("bwrap", () => {}, cannot)).rejects.toThrow(/FOLIO_PARSER_JAIL=bwrap: bubblewrap cannot run/);
    expect(await startParserJail("none", () => {}, cannot)).toBe("none");
  });

  it.skipIf(!bwrapInstalled)("auto is bwrap on this machine, where bubblewrap runs", async () => {
    expect(await startParserJail("auto", () => {})).toBe("bwrap");
  });

  it("a long-lived jailed program gets its own limits: unlimited CPU, more address space", () => {
    const j = jailed("node", ["child.js"], { limits: { cpuSeconds: null, addressSpaceBytes: 8 * 1024 ** 3 } }, "bwrap");
    expect(j.args).toContain("--cpu=unlimited");
    expect(j.args).toContain(`--as=${8 * 1024 ** 3}`);
    expect(jailed("pdfinfo", [], {}, "bwrap").args).toContain(`--cpu=${JAIL_LIMITS.cpuSeconds}`);
  });
});

describe.skipIf(bwrapInstalled)("the bubblewrap parser jail where bubblewrap is missing", () => {
  it("stops the start naming FOLIO_PARSER_JAIL", async () => {
    await expect(checkParserJail("bwrap")).rejects.toThrow(/FOLIO_PARSER_JAIL=bwrap/);
  });
});

async function until(ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Whether any process of the group `pgid` is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** How many processes have `pid` as their parent. */
function childrenOf(pid: number): number {
  let n = 0;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) n++;
    } catch {
      // gone
    }
  }
  return n;
}
