// A TypeScript ACP client on the official SDK (@agentclientprotocol/sdk
// 2.4.0, unstable schema). It spawns the Go agent named on the command
// line, drives initialize, session/new and one prompt turn, answers the
// agent's permission and file requests, and prints a JSON summary of what
// it saw on stdout for the Go test to check. The prompt text is
// TS_PROMPT when set.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk/unstable";

const [bin, ...args] = process.argv.slice(2);
if (!bin) {
  console.error("usage: node client.mjs <agent-binary> [args...]");
  process.exit(2);
}
const child = spawn(bin, args, { stdio: ["pipe", "pipe", "inherit"] });

const seen = { updates: [], requests: [] };
const app = client({ name: "ts-peer-client" })
  .onNotification("session/update", ({ params }) => {
    seen.updates.push(params);
  })
  .onRequest("session/request_permission", ({ params }) => {
    seen.requests.push({ method: "session/request_permission", params });
    const allow = params.options.find((o) => o.kind === "allow_once" || o.kind === "allow_always");
    return { outcome: allow ? { outcome: "selected", optionId: allow.optionId } : { outcome: "cancelled" } };
  })
  .onRequest("fs/read_text_file", ({ params }) => {
    seen.requests.push({ method: "fs/read_text_file", params });
    return { content: "# read by the TypeScript client" };
  });

const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
let exitCode = 0;
try {
  const summary = await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: false, subagents: {} },
      clientInfo: { name: "ts-peer-client", version: "2.4.0" },
    });
    const session = await ctx.buildSession("/repo").start();
    const response = await session.prompt(process.env.TS_PROMPT || "explore the repository");
    session.dispose();
    let unknownMethod = null;
    try {
      await ctx.request("cursor/task", { toolCallId: "x" });
    } catch (err) {
      unknownMethod = { code: err.code, message: err.message, data: err.data ?? null };
    }
    return { init, sessionId: session.sessionId, stopReason: response.stopReason, unknownMethod };
  });
  process.stdout.write(JSON.stringify({ ...summary, ...seen }) + "\n");
} catch (err) {
  console.error("ts client failed:", err);
  exitCode = 1;
} finally {
  child.stdin.end();
  child.kill();
}
process.exit(exitCode);
