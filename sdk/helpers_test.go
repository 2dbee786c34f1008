package acp

import (
	"encoding/json"
	"testing"
)

func TestHelpersMarshal(t *testing.T) {
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"text", TextBlock("hi"), `{"text":"hi","type":"text"}`},
		{"image", ImageBlock("AA==", "image/png"), `{"data":"AA==","mimeType":"image/png","type":"image"}`},
		{"link", ResourceLinkBlock("a", "file:///a"), `{"name":"a","type":"resource_link","uri":"file:///a"}`},
		{"tool content", ToolContent(TextBlock("x")), `{"content":{"text":"x","type":"text"},"type":"content"}`},
		{"diff new file", ToolDiffContent("/a", "new"), `{"newText":"new","path":"/a","type":"diff"}`},
		{"diff", ToolDiffContent("/a", "new", "old"), `{"newText":"new","oldText":"old","path":"/a","type":"diff"}`},
		{"terminal", ToolTerminalRef("t1"), `{"terminalId":"t1","type":"terminal"}`},
		{"agent text", UpdateAgentMessageText("yo"), `{"content":{"text":"yo","type":"text"},"sessionUpdate":"agent_message_chunk"}`},
		{"thought", UpdateAgentThoughtText("hm"), `{"content":{"text":"hm","type":"text"},"sessionUpdate":"agent_thought_chunk"}`},
		{"user", UpdateUserMessageText("q"), `{"content":{"text":"q","type":"text"},"sessionUpdate":"user_message_chunk"}`},
		{"read", StartReadToolCall("c1", "Read a", "/a"), `{"kind":"read","locations":[{"path":"/a"}],"rawInput":{"path":"/a"},"sessionUpdate":"tool_call","status":"pending","title":"Read a","toolCallId":"c1"}`},
		{"edit", StartEditToolCall("c2", "Edit a", "/a", "x"), `{"kind":"edit","locations":[{"path":"/a"}],"rawInput":{"content":"x","path":"/a"},"sessionUpdate":"tool_call","status":"pending","title":"Edit a","toolCallId":"c2"}`},
		{"locations add path", StartToolCall("c3", "t", WithStartRawInput(map[string]any{"q": 1}), WithStartLocations([]ToolCallLocation{{Path: "/p"}})), `{"locations":[{"path":"/p"}],"rawInput":{"path":"/p","q":1},"sessionUpdate":"tool_call","title":"t","toolCallId":"c3"}`},
		{"locations empty path", StartToolCall("c4", "t", WithStartLocations([]ToolCallLocation{{Path: ""}})), `{"locations":[{"path":""}],"sessionUpdate":"tool_call","title":"t","toolCallId":"c4"}`},
		{"locations keep path", StartToolCall("c5", "t", WithStartRawInput(map[string]any{"path": "/x"}), WithStartLocations([]ToolCallLocation{{Path: "/p"}})), `{"locations":[{"path":"/p"}],"rawInput":{"path":"/x"},"sessionUpdate":"tool_call","title":"t","toolCallId":"c5"}`},
		{"plan", UpdatePlan(PlanEntry{Content: "step", Priority: PlanEntryPriorityHigh, Status: PlanEntryStatusPending}), `{"entries":[{"content":"step","priority":"high","status":"pending"}],"sessionUpdate":"plan"}`},
		{"update", UpdateToolCall("c1", WithUpdateStatus(ToolCallStatusCompleted), WithUpdateTitle("done"), WithUpdateKind(ToolKindRead), WithUpdateRawOutput(map[string]any{"n": 2})), `{"kind":"read","rawOutput":{"n":2},"sessionUpdate":"tool_call_update","status":"completed","title":"done","toolCallId":"c1"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if p := Ptr(3); *p != 3 {
		t.Fatal("Ptr")
	}
}
