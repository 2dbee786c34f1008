// A TypeScript ACP client on the official SDK (@agentclientprotocol/sdk
// 2.4.0, unstable entry point) for the methods and updates newer than
// schema 0.13.5. It spawns the Go agent named on the command line
// (conformance/internal/peeragent/cmd/nextagent), calls every newer
// client-to-agent method (one session/set_title cancelled with
// $/cancel_request while the agent holds it), prompts once (the agent then calls every newer
// agent-to-client method and sends every newer update, each validated by
// this SDK's schema), and prints a JSON summary on stdout for the Go test.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk/unstable";

const [bin, ...args] = process.argv.slice(2);
if (!bin) {
  console.error("usage: node client_next.mjs <agent-binary> [args...]");
  process.exit(2);
}
const child = spawn(bin, args, { stdio: ["pipe", "pipe", "inherit"] });

const seen = { updates: [] };
// The cancellation of the held session/set_title: aborted when the Go
// agent says (a "holding" notice) that it holds the request.
const hold = new AbortController();
const app = client({ name: "ts-next-client" })
  .onNotification("session/update", ({ params }) => {
    if (params.update.sessionUpdate === "notice" && params.update.title === "holding") {
      hold.abort();
      return;
    }
    seen.updates.push(params.update);
  })
  .onRequest("elicitation/create", ({ params }) => {
    seen["elicitation/create"] = params;
    return { action: "accept", content: { color: "teal" } };
  })
  .onNotification("elicitation/complete", ({ params }) => {
    seen["elicitation/complete"] = params;
  })
  .onNotification("auth/status_update", ({ params }) => {
    seen["auth/status_update"] = params;
  })
  .onRequest("mcp/message", ({ params }) => {
    seen["mcp/message"] = params;
    return { content: [], isError: false };
  });

const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
let exitCode = 0;
try {
  const summary = await app.connectWith(stream, async (ctx) => {
    const results = {};
    results.initialize = await ctx.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: { plan: {}, elicitation: { form: {} } },
      clientInfo: { name: "ts-next-client", version: "2.4.0" },
    });
    const session = await ctx.request("session/new", {
      cwd: "/repo", mcpServers: [],
      systemPrompt: { mode: "override", content: [{ type: "text", text: "You are terse." }] },
    });
    const sid = session.sessionId;
    results["session/delete"] = await ctx.request("session/delete", { sessionId: "ts-old-1" });
    results["session/archive"] = await ctx.request("session/archive", { sessionId: sid });
    results["session/unarchive"] = await ctx.request("session/unarchive", { sessionId: sid });
    results["session/status"] = await ctx.request("session/status", { sessionId: sid });
    results["session/set_title"] = await ctx.request("session/set_title", { sessionId: sid, title: "Refactor" });
    results["auth/status"] = await ctx.request("auth/status", {});
    // $/cancel_request: the agent holds this call until it is cancelled,
    // then answers it (this SDK waits for that answer).
    try {
      results["$/cancel_request"] = { answered: await ctx.request("session/set_title", { sessionId: sid, title: "hold" }, { cancellationSignal: hold.signal }) };
    } catch (err) {
      results["$/cancel_request"] = { code: err.code ?? null, message: String(err.message ?? err) };
    }
    await ctx.notify("mcp/message", { serverId: "ts-mcp", requestId: "ts-req-9", method: "notifications/progress", params: { progress: 1 } });
    results.prompt = await ctx.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "go" }] });
    return { sessionId: sid, results };
  });
  process.stdout.write(JSON.stringify({ ...summary, seen }) + "\n");
} catch (err) {
  console.error("ts client failed:", err);
  exitCode = 1;
} finally {
  child.stdin.end();
  child.kill();
}
process.exit(exitCode);
