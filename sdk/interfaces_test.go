package acp

import (
	"reflect"
	"sort"
	"testing"
)

func methodNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumMethod(); i++ {
		out = append(out, t.Method(i).Name)
	}
	sort.Strings(out)
	return out
}

// Consumers pass their own types to the constructors: Client must keep
// exactly upstream's 9 methods and Agent at most the 12 they implement.
func TestInterfaceMethodSets(t *testing.T) {
	client := methodNames(reflect.TypeOf((*Client)(nil)).Elem())
	want := []string{"CreateTerminal", "KillTerminal", "ReadTextFile", "ReleaseTerminal", "RequestPermission", "SessionUpdate", "TerminalOutput", "WaitForTerminalExit", "WriteTextFile"}
	if !reflect.DeepEqual(client, want) {
		t.Fatalf("Client = %v, want %v", client, want)
	}
	allowed := map[string]bool{"Authenticate": true, "Cancel": true, "CloseSession": true, "DeleteSession": true, "Initialize": true, "ListSessions": true, "Logout": true, "NewSession": true, "Prompt": true, "ResumeSession": true, "SetSessionConfigOption": true, "SetSessionMode": true}
	for _, m := range methodNames(reflect.TypeOf((*Agent)(nil)).Elem()) {
		if !allowed[m] {
			t.Errorf("Agent has %s, which consumers' agents do not implement", m)
		}
	}
	if got := methodNames(reflect.TypeOf((*AgentLoader)(nil)).Elem()); !reflect.DeepEqual(got, []string{"LoadSession"}) {
		t.Errorf("AgentLoader = %v", got)
	}
}
