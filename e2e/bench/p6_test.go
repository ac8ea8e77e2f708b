package main

import (
	"strings"
	"testing"
)

func TestSpliceRelistMemorySection(t *testing.T) {
	sec := func(body string) string { return p6Begin + "\n" + body + "\n" + p6End + "\n\n" }
	for _, tc := range []struct{ name, page, want string }{
		{"before the watch 410 recovery section", "# B\n\n## Other: x\n\n## P2: y\n", "# B\n\n## Other: x\n\n" + sec("new") + "## P2: y\n"},
		{"replaces only the old section", "# B\n\n" + sec("old") + "## P2: y\n", "# B\n\n" + sec("new") + "## P2: y\n"},
		{"at the end", "# B\n\n## Other: x\n", "# B\n\n## Other: x\n\n" + sec("new")},
	} {
		if got := spliceP6(tc.page, sec("new")); got != tc.want {
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
	c.p6Window = 1
	if err := c.p6Flags("", "10000,50000", "", "off,on", 3, ""); err != nil {
		t.Fatal(err)
	}
	if len(c.p6Objects) != 2 || len(c.p6Streaming) != 2 || c.p6Streaming[0] || !c.p6Streaming[1] || c.p6Count != 3 || c.p6Contenders[0] != "stock" {
		t.Errorf("defaults: got %+v", c)
	}
	if err := c.p6Flags("", "1", "sometimes", "off", 1, ""); err == nil || !strings.Contains(err.Error(), "-p6-streaming") {
		t.Errorf("bad -p6-streaming: got %v", err)
	}
	if err := c.p6Flags("", "1", "", "off", 1, "sw-informer,stock"); err == nil {
		t.Error("stock not first: no error")
	}
}
