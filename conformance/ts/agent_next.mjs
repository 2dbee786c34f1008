// A TypeScript ACP agent on the official SDK (@agentclientprotocol/sdk
// 2.4.0, unstable entry point) for the methods and updates that are newer
// than schema 0.13.5. Our Go client spawns it. Every request and
// notification it receives has passed the SDK's schema validation; it keeps
// each one's params under its method name. On session/prompt it calls the
// client with each newer agent-to-client method and update, and answers
// with everything it saw (its own inbound params and the client's results)
// in the response's _meta, for the Go test to check on this side's terms.
// A session/set_title titled "hold" waits for the client's $/cancel_request.
import { Readable, Writable } from "node:stream";
import { agent, ndJsonStream } from "@agentclientprotocol/sdk/unstable";

const SESSION = "ts-next-1";
const seen = {};
const keep = (method, params) => {
  seen[method] = params;
};

const app = agent({ name: "ts-next-agent" })
  .onRequest("initialize", ({ params }) => {
    keep("initialize", params);
    return {
      protocolVersion: 1,
      agentCapabilities: {
        sessionCapabilities: { delete: {}, archive: {}, status: {}, title: {} },
        auth: { status: {} },
      },
      agentInfo: { name: "ts-next-agent", version: "2.4.0" },
      authMethods: [],
    };
  })
  .onRequest("session/new", ({ params }) => {
    keep("session/new", params);
    return { sessionId: SESSION };
  })
  .onRequest("session/delete", ({ params }) => {
    keep("session/delete", params);
    return { _meta: { deleted: params.sessionId } };
  })
  .onRequest("session/archive", ({ params }) => {
    keep("session/archive", params);
    return {};
  })
  .onRequest("session/unarchive", ({ params }) => {
    keep("session/unarchive", params);
    return {};
  })
  .onRequest("session/status", ({ params }) => {
    keep("session/status", params);
    return { status: "saved" };
  })
  .onRequest("session/set_title", ({ params, client, signal }) => {
    if (params.title !== "hold") {
      keep("session/set_title", params);
      return {};
    }
    // $/cancel_request: hold the request, tell the client it is held (a
    // notice), and end it when the client's cancellation aborts it.
    return new Promise((_, reject) => {
      const aborted = () => {
        keep("$/cancel_request", { title: params.title, code: signal.reason?.code ?? null });
        reject(signal.reason);
      };
      signal.addEventListener("abort", aborted, { once: true });
      client.notify("session/update", {
        sessionId: params.sessionId,
        update: { sessionUpdate: "notice", severity: "info", title: "holding" },
      });
    });
  })
  .onRequest("auth/status", ({ params }) => {
    keep("auth/status", params);
    return { state: "authenticated", accounts: [{ label: "work", email: "dev@example.com", active: true }] };
  })
  .onNotification("mcp/message", ({ params }) => {
    keep("mcp/message", params);
  })
  .onNotification("session/cancel", () => {})
  .onRequest("session/prompt", async ({ params, client }) => {
    const sid = params.sessionId;
    const update = (u) => client.notify("session/update", { sessionId: sid, update: u });
    const results = {};
    results["elicitation/create"] = await client.request("elicitation/create", {
      sessionId: sid,
      mode: "form",
      message: "Your name?",
      requestedSchema: { type: "object", properties: { name: { type: "string", title: "Name" } }, required: ["name"] },
    });
    await client.notify("elicitation/complete", { elicitationId: "ts-elicit-1" });
    await client.notify("auth/status_update", { state: "unauthenticated", accounts: [] });
    results["mcp/message"] = await client.request("mcp/message", {
      serverId: "ts-mcp", requestId: "ts-req-1", method: "tools/list", params: { cursor: "c1" },
    });
    await update({ sessionUpdate: "notice", severity: "warning", title: "Heads up", description: "disk almost full" });
    await update({ sessionUpdate: "compaction_update", compactionId: "ts-comp-1", status: "in_progress" });
    await update({ sessionUpdate: "compaction_summary_chunk", compactionId: "ts-comp-1", content: { type: "text", text: "summary so far" } });
    await update({
      sessionUpdate: "compaction_update", compactionId: "ts-comp-1", status: "completed",
      summary: [{ type: "text", text: "the summary" }],
    });
    await update({ sessionUpdate: "usage_update", used: 1200, size: 200000, cost: { amount: 0.25, currency: "USD" } });
    return { stopReason: "end_turn", _meta: { seen, results } };
  });

const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const conn = app.connect(stream);
await conn.closed?.catch?.(() => {});
