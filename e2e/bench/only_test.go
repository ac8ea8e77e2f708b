package main

import "testing"

func TestOnlyTakesScenarioNames(t *testing.T) {
	for _, ok := range []string{"sync,recovery,restart,overhead,cost,relist,scaling", "relist", "sharding", "sync,"} {
		if err := checkScenarios(ok); err != nil {
			t.Errorf("-only %q: %v", ok, err)
		}
	}
	// A list naming nothing the bench runs would write an empty page.
	for _, bad := range []string{"", ",", "memory", "relist,shard", "Relist"} {
		if err := checkScenarios(bad); err == nil {
			t.Errorf("-only %q: accepted", bad)
		}
	}
}
