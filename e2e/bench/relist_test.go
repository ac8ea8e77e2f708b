package main

import (
	"strings"
	"testing"
)

func TestSpliceRelistMemorySection(t *testing.T) {
	sec := func(body string) string { return relistBegin + "\n" + body + "\n" + relistEnd + "\n\n" }
	for _, tc := range []struct{ name, page, want string }{
		{"before the watch 410 recovery section", "# B\n\n## Other: x\n\n" + recoveryHeading + " y\n", "# B\n\n## Other: x\n\n" + sec("new") + recoveryHeading + " y\n"},
		{"replaces only the old section", "# B\n\n" + sec("old") + recoveryHeading + " y\n", "# B\n\n" + sec("new") + recoveryHeading + " y\n"},
		{"at the end", "# B\n\n## Other: x\n", "# B\n\n## Other: x\n\n" + sec("new")},
	} {
		if got := spliceRelist(tc.page, sec("new")); got != tc.want {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}

func TestCountRelists(t *testing.T) {
	reqs := []requestRecord{
		{Path: "/api/v1/namespaces/a/configmaps", Query: "limit=500&resourceVersion=0", Status: 200},                                // a list
		{Path: "/api/v1/namespaces/a/configmaps", Query: "continue=abc&limit=500", Status: 200},                                     // its next page
		{Path: "/api/v1/namespaces/a/configmaps", Query: "limit=1", Status: 200},                                                    // a count read
		{Path: "/api/v1/namespaces/a/configmaps", Query: "allowWatchBookmarks=true&sendInitialEvents=true&watch=true", Status: 200}, // a streaming list
		{Path: "/api/v1/namespaces/a/configmaps", Query: "sendInitialEvents=true&watch=true", Status: 422},                          // refused
		{Path: "/api/v1/namespaces/a/configmaps", Query: "resourceVersion=5&watch=true", Status: 200},                               // a watch
	}
	if got := countRelists(reqs); got != 2 {
		t.Errorf("countRelists = %d, want 2 (one list, one streaming list)", got)
	}
}

func TestRelistMemoryFlags(t *testing.T) {
	var c config
	c.relistWindow = 1
	if err := c.relistFlags("", "10000,50000", "", "off,on", 3, ""); err != nil {
		t.Fatal(err)
	}
	if len(c.relistObjects) != 2 || len(c.relistStreaming) != 2 || c.relistStreaming[0] || !c.relistStreaming[1] || c.relistCount != 3 || c.relistContenders[0] != "stock" {
		t.Errorf("defaults: got %+v", c)
	}
	if err := c.relistFlags("", "1", "sometimes", "off", 1, ""); err == nil || !strings.Contains(err.Error(), "-relist-streaming") {
		t.Errorf("bad -relist-streaming: got %v", err)
	}
	if err := c.relistFlags("", "1", "", "off", 1, "sw-informer,stock"); err == nil {
		t.Error("stock not first: no error")
	}
}
