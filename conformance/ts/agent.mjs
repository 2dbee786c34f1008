// A TypeScript ACP agent on the official SDK (@agentclientprotocol/sdk
// 2.4.0, unstable schema so subagent_update is in reach). Our Go client
// spawns it and drives one whole turn: message chunks, a tool call, a
// subagent announced with subagent_update and its child session's output,
// a permission request, a file read, the tool call's completion.
import { Readable, Writable } from "node:stream";
import { agent, ndJsonStream } from "@agentclientprotocol/sdk/unstable";

const SESSION = "ts-session-1";
const CHILD = "ts-child-1";

let clientCaps = {};

const app = agent({ name: "ts-peer-agent" })
  .onRequest("initialize", ({ params }) => {
    clientCaps = params.clientCapabilities ?? {};
    return {
      protocolVersion: 1,
      agentCapabilities: { loadSession: false, promptCapabilities: { embeddedContext: true } },
      agentInfo: { name: "ts-peer-agent", version: "2.4.0" },
      authMethods: [],
    };
  })
  .onRequest("session/new", () => ({ sessionId: SESSION }))
  .onNotification("session/cancel", () => {})
  .onRequest("session/prompt", async ({ params, client }) => {
    const sid = params.sessionId;
    const update = (u, sessionId = sid) => client.notify("session/update", { sessionId, update: u });

    await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Delegating to a subagent." } });
    await update({
      sessionUpdate: "tool_call", toolCallId: "ts-tool-1", title: "Task: explore the repo",
      kind: "other", status: "pending", rawInput: { subagent_type: "explore", description: "Explore the repo", prompt: "List the packages" },
    });
    await update({ sessionUpdate: "subagent_update", sessionId: CHILD, title: "Explore", description: "Explore the repo", state: { state: "running" } });
    await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "child says hi" } }, CHILD);

    const perm = await client.request("session/request_permission", {
      sessionId: sid,
      toolCall: { toolCallId: "ts-tool-1", title: "Task: explore the repo" },
      options: [
        { optionId: "allow", name: "Allow", kind: "allow_once" },
        { optionId: "reject", name: "Reject", kind: "reject_once" },
      ],
    });
    const allowed = perm.outcome.outcome === "selected" && perm.outcome.optionId === "allow";
    if (!allowed) {
      await update({ sessionUpdate: "tool_call_update", toolCallId: "ts-tool-1", status: "failed" });
      return { stopReason: "end_turn" };
    }
    await update({ sessionUpdate: "tool_call_update", toolCallId: "ts-tool-1", status: "in_progress" });

    let text = "(no fs)";
    if (clientCaps.fs?.readTextFile) {
      const file = await client.request("fs/read_text_file", { sessionId: sid, path: "/repo/go.mod" });
      text = file.content;
    }
    await update({ sessionUpdate: "subagent_update", sessionId: CHILD, state: { state: "idle", stopReason: "end_turn" } });
    await update({
      sessionUpdate: "tool_call_update", toolCallId: "ts-tool-1", status: "completed",
      content: [{ type: "content", content: { type: "text", text } }],
      rawOutput: { lines: text.split("\n").length },
    });
    await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Done." } });
    return { stopReason: "end_turn" };
  });

const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const conn = app.connect(stream);
await conn.closed?.catch?.(() => {});
