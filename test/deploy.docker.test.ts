/**
 * The container images deploy/docker, read as Dockerfiles: their bases, what
 * they copy, their user, packages and entry points.
 */
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { SANDBOX_UID } from "../internal/operator/job.ts";
import { brokerModeOptions } from "../internal/sandbox/kubernetes/pod.ts";
import { buildSandboxProgram } from "../internal/sandbox/assets.ts";
import { prepareProfile } from "../internal/sandbox/profile.ts";
import { FONT_PACKAGES } from "../internal/sandbox/fonts.ts";
import { read } from "./deploy/checks.ts";

describe("container images deploy/docker", () => {
  interface Stage {
    from: string;
    name?: string;
    lines: string[];
  }
  /** A Dockerfile's stages; a base named by a global ARG (`FROM ${NODE_IMAGE}`) is read as that ARG's default. */
  const stages = (file: string): Stage[] => {
    const text = read(file).replace(/\\\n/g, " ");
    const out: Stage[] = [];
    const globalArgs = new Map<string, string>();
    for (const line of text.split("\n").map((l) => l.trim())) {
      if (!line || line.startsWith("#")) continue;
      const arg = /^ARG\s+([A-Za-z_][A-Za-z0-9_]*)=(\S+)$/i.exec(line);
      if (arg && out.length === 0) globalArgs.set(arg[1]!, arg[2]!);
      const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
      const base = from?.[1]?.replace(/^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/, (whole, name: string) => globalArgs.get(name) ?? whole);
      if (from) out.push({ from: base!, ...(from[2] ? { name: from[2] } : {}), lines: [] });
      else out.at(-1)?.lines.push(line);
    }
    return out;
  };
  const final = (file: string) => stages(file).at(-1)!;
  const instruction = (stage: Stage, word: string) => stage.lines.filter((l) => l.toUpperCase().startsWith(`${word} `)).map((l) => l.slice(word.length + 1).trim());
  const allowed = read(".dockerignore")
    .split("\n")
    .filter((l) => l.startsWith("!"))
    .map((l) => l.slice(1));

  it.each(["deploy/docker/Dockerfile", "deploy/docker/sandbox.Dockerfile"])("%s builds from Debian 12 images named without a registry host", (file) => {
    const names = new Set(stages(file).flatMap((s) => (s.name ? [s.name] : [])));
    for (const s of stages(file)) {
      if (names.has(s.from)) continue;
      expect(["node:24-bookworm-slim", "debian:bookworm-slim"]).toContain(s.from);
    }
  });

  it.each(["deploy/docker/Dockerfile", "deploy/docker/sandbox.Dockerfile"])("%s copies only what .dockerignore lets into the context", (file) => {
    for (const s of stages(file)) {
      for (const copy of instruction(s, "COPY").filter((c) => !c.startsWith("--from"))) {
        const sources = copy.split(/\s+/).slice(0, -1);
        for (const src of sources) expect(allowed, `${file}: COPY ${src}`).toContain(src.replace(/\/$/, ""));
      }
    }
  });

  it("runs the service image as the chart's user, with the programs the processes need", () => {
    const stage = final("deploy/docker/Dockerfile");
    const values = parseYaml(read("deploy/helm/folio/values.yaml")) as { podSecurityContext: { runAsUser: number; runAsGroup: number } };
    expect(instruction(stage, "USER")).toEqual([`${values.podSecurityContext.runAsUser}:${values.podSecurityContext.runAsGroup}`]);
    const run = instruction(stage, "RUN").join(" ");
    for (const pkg of ["tesseract-ocr", "tesseract-ocr-eng", "tesseract-ocr-deu", "poppler-utils"]) expect(run).toContain(` ${pkg}`);
    const entrypoint = JSON.parse(instruction(stage, "ENTRYPOINT")[0]!) as string[];
    // The compiled files the entry point names come from these sources.
    expect(entrypoint).toEqual(["node", "--import", "/app/dist/internal/platform/telemetry/register.js", "/app/dist/cmd/folio/main.js"]);
    for (const source of ["internal/platform/telemetry/register.ts", "cmd/folio/main.ts"]) expect(() => read(source)).not.toThrow();
    expect(read("cmd/folio/main.ts").startsWith("#!/usr/bin/env node")).toBe(true);
  });

  it("makes a sandbox image that runs the bundled program as nobody with the profile where the program looks", () => {
    const stage = final("deploy/docker/sandbox.Dockerfile");
    expect(instruction(stage, "USER")).toEqual([`${SANDBOX_UID}:${SANDBOX_UID}`]);
    expect(JSON.parse(instruction(stage, "ENTRYPOINT")[0]!)).toEqual(["/usr/local/bin/node", "/opt/folio/sandbox.mjs"]);
    const env = instruction(stage, "ENV").join(" ");
    expect(env).toContain(`FOLIO_PROFILE_DIR=${brokerModeOptions({}).profileDir}`);
    expect(env).toContain("TMPDIR=/tmp");
    const run = instruction(stage, "RUN").join(" ");
    for (const pkg of ["libreoffice-writer-nogui", "libreoffice-impress-nogui", "poppler-utils", "fonts-dejavu-core"]) expect(run).toContain(` ${pkg}`);
    expect(run).toContain("--no-install-recommends");
    // The build stage calls these by name.
    const build = read("deploy/docker/sandbox.Dockerfile");
    expect(build).toContain('m.buildSandboxProgram("/out/sandbox.mjs")');
    expect(build).toContain("import { prepareProfile } from \"./internal/sandbox/profile.ts\"");
    expect(typeof buildSandboxProgram).toBe("function");
    expect(typeof prepareProfile).toBe("function");
  });

  it("installs the declared font set and its fontconfig configuration in both images, as ensure-deps does on a host", () => {
    for (const file of ["deploy/docker/Dockerfile", "deploy/docker/sandbox.Dockerfile"]) {
      const stage = final(file);
      const run = instruction(stage, "RUN").join(" ");
      for (const pkg of FONT_PACKAGES) expect(run, `${file} installs ${pkg}`).toContain(` ${pkg}`);
      expect(instruction(stage, "COPY").some((c) => c.startsWith("--from=build ") && c.endsWith(" /etc/fonts/fonts.conf")), `${file} copies fonts.conf`).toBe(true);
      expect(read(file), `${file} generates fonts.conf with fontsConf()`).toContain("m.fontsConf()");
    }
    const fonts = /^font_pkgs=\(([^)]*)\)/m.exec(read("scripts/ensure-deps.sh"))?.[1]?.split(/\s+/) ?? [];
    expect([...fonts].sort()).toEqual([...FONT_PACKAGES].sort());
    expect(read("scripts/ensure-deps.sh")).toMatch(/^run_pkgs=\(.*"\$\{font_pkgs\[@\]\}"/m);
  });
});
