// An editor stand-in on the official TypeScript SDK (@agentclientprotocol/sdk
// 2.4.0, pinned in package.json): what Zed or JetBrains do with one agent
// process, several sessions at once. It spawns the command on its command
// line (acpscope tap in front of the agent), declares the subagent-session
// form, opens two sessions and prompts both at once (EDITOR_PROMPT_A,
// EDITOR_PROMPT_B, in EDITOR_CWD). The Go test steers it through its
// standard input: the line "cancel" cancels session A's turn. It reports on
// its standard output, one JSON object a line: {"sessions":{a,b}} once both
// are open, {"answer":"a"|"b","stopReason":…} for each prompt answer, and
// last {"exit":code,"signal":…} when the command ended after it closed the
// command's input (the editor quits). Every permission is allowed; files and
// terminals are refused.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";
import { client, ndJsonStream } from "@agentclientprotocol/sdk/unstable";

const [bin, ...args] = process.argv.slice(2);
if (!bin) {
  console.error("usage: node editor.mjs <command> [args...]");
  process.exit(2);
}
const report = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const child = spawn(bin, args, { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ exit: code, signal })));

// The test's steering lines, each awaited by name.
const lines = createInterface({ input: process.stdin });
const waiting = new Map();
lines.on("line", (line) => {
  const w = waiting.get(line.trim());
  if (w) {
    waiting.delete(line.trim());
    w();
  }
});
const told = (word) => new Promise((resolve) => waiting.set(word, resolve));

const app = client({ name: "editor-stand-in" })
  .onNotification("session/update", () => {})
  .onRequest("session/request_permission", ({ params }) => {
    const allow = params.options.find((o) => o.kind === "allow_once" || o.kind === "allow_always");
    return { outcome: allow ? { outcome: "selected", optionId: allow.optionId } : { outcome: "cancelled" } };
  });

const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
let status = 0;
try {
  await app.connectWith(stream, async (ctx) => {
    await ctx.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, subagents: {} },
      clientInfo: { name: "editor-stand-in", version: "1" },
    });
    const cwd = process.env.EDITOR_CWD;
    const open = async () => (await ctx.request("session/new", { cwd, mcpServers: [] })).sessionId;
    const a = await open();
    const b = await open();
    report({ sessions: { a, b } });
    const prompt = (sessionId, text, name) =>
      ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] }).then((r) => {
        report({ answer: name, stopReason: r.stopReason });
        return r;
      });
    const answerA = prompt(a, process.env.EDITOR_PROMPT_A, "a");
    const answerB = prompt(b, process.env.EDITOR_PROMPT_B, "b");
    await told("cancel");
    await ctx.notify("session/cancel", { sessionId: a });
    await answerA;
    await answerB;
  });
} catch (err) {
  console.error("editor stand-in failed:", err);
  status = 1;
}
child.stdin.end(); // the editor quits
report(await exited);
lines.close();
process.exit(status);
