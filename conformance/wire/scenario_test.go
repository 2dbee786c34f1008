package main

import "testing"

// TestScenariosLoad checks every scenario file parses strictly, names are
// unique, and every handler behaviour decodes.
func TestScenariosLoad(t *testing.T) {
	list, err := loadScenarios("scenarios")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) < 40 {
		t.Fatalf("%d scenarios, want at least 40", len(list))
	}
	for i := range list {
		for m := range list[i].Handlers {
			if _, err := list[i].behaviours(m); err != nil {
				t.Errorf("%s: %v", list[i].Name, err)
			}
		}
	}
}
