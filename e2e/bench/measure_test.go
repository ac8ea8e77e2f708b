package main

import (
	"encoding/json"
	"testing"
)

// TestResultsKeepTheirJSONShape: the wire counts shared by the child
// results (wireStats) stay top-level fields of each result, in their place,
// so results files and the report read them as before.
func TestResultsKeepTheirJSONShape(t *testing.T) {
	w := wireStats{WireIn: 1, WireOut: 2, BodyIn: 3, Requests: map[string]int{"list": 1}}
	for _, tc := range []struct {
		v    any
		want string
	}{
		{syncResult{Contender: "stock", Objects: 1, wireStats: w},
			`{"contender":"stock","objects":1,"sync_ms":0,"peak_heap_bytes":0,"base_heap_bytes":0,"retained_heap_bytes":0,"gc_cycles":0,` +
				`"wire_in_bytes":1,"wire_out_bytes":2,"body_in_bytes":3,"requests":{"list":1}}`},
		{recoveryResult{Contender: "stock", wireStats: w},
			`{"contender":"stock","instances":0,"initial_sync_ms":0,"recover_ms":0,"done_unix_ns":0,` +
				`"wire_in_bytes":1,"wire_out_bytes":2,"body_in_bytes":3,"requests":{"list":1}}`},
		{shardingResult{Replica: 1, Names: []string{"a"}, wireStats: w},
			`{"replica":1,"replicas":0,"objects":0,"sync_ms":0,"peak_heap_bytes":0,"peak_live_bytes":0,"base_heap_bytes":0,"retained_heap_bytes":0,"gc_cycles":0,` +
				`"wire_in_bytes":1,"wire_out_bytes":2,"body_in_bytes":3,"requests":{"list":1},"names":["a"]}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%T:\n got %s\nwant %s", tc.v, b, tc.want)
		}
	}
}
