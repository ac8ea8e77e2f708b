package main

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseServerLists(t *testing.T) {
	servers, err := parseServers(" v1.37.2, ,v1.37.2/nocache")
	if want := []serverSpec{{Spec: "v1.37.2", Version: "v1.37.2"}, {Spec: "v1.37.2/nocache", Version: "v1.37.2", NoCache: true}}; err != nil || !reflect.DeepEqual(servers, want) {
		t.Errorf("parseServers: %+v %v, want %+v", servers, err, want)
	}
	sharded, err := parseShardingServers("v1.18.19,v1.37.2/sharded")
	if want := []shardingServer{{Spec: "v1.18.19", Version: "v1.18.19"}, {Spec: "v1.37.2/sharded", Version: "v1.37.2", Gate: true}}; err != nil || !reflect.DeepEqual(sharded, want) {
		t.Errorf("parseShardingServers: %+v %v, want %+v", sharded, err, want)
	}
	for _, tc := range []struct {
		parse func(string) error
		in    string
		want  string
	}{
		{func(s string) error { _, err := parseServers(s); return err }, "v1.37.2/sharded", `server "v1.37.2/sharded": unknown option "sharded" (only /nocache)`},
		{func(s string) error { _, err := parseServers(s); return err }, "1.37.2", `server "1.37.2": want a release like v1.37.2`},
		{func(s string) error { _, err := parseServers(s); return err }, " , ", "-servers is empty"},
		{func(s string) error { _, err := parseShardingServers(s); return err }, "v1.37.2/nocache",
			`-sharding-servers: "v1.37.2/nocache": unknown option "nocache" (only /sharded: --feature-gates=ShardedListAndWatch=true)`},
		{func(s string) error { _, err := parseShardingServers(s); return err }, "latest/sharded", `-sharding-servers: "latest/sharded": want a release like v1.37.2`},
		{func(s string) error { _, err := parseShardingServers(s); return err }, "", "-sharding-servers is empty"},
	} {
		if err := tc.parse(tc.in); err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.in, err, tc.want)
		}
	}
}

func TestRepeatAlternating(t *testing.T) {
	var ran []string
	failures := map[string]string{"c": "not run: earlier"}
	heading := func(r int) { ran = append(ran, "|") }
	err := repeatAlternating(context.Background(), 3, []string{"a", "b", "c"}, contenderKey, 4, failures, heading, func(r int, name string) error {
		ran = append(ran, name)
		if name == "b" && r == 1 {
			return errors.New("boom")
		}
		return nil
	})
	// c never runs (failed before); b's failure in repetition 2 ends its runs.
	if got, want := strings.Join(ran, ""), "|ab|ba|a"; err != nil || got != want {
		t.Errorf("ran %q (%v), want %q", got, err, want)
	}
	if want := map[string]string{"c": "not run: earlier", "b": "repetition 2: boom"}; !reflect.DeepEqual(failures, want) {
		t.Errorf("failures %v, want %v", failures, want)
	}

	// A failure once the context has ended ends the whole with its error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran = nil
	err = repeatAlternating(ctx, 2, []string{"a", "b"}, contenderKey, 4, map[string]string{}, heading, func(r int, name string) error {
		ran = append(ran, name)
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) || strings.Join(ran, "") != "|a" {
		t.Errorf("after ctx ended: ran %q, err %v", ran, err)
	}
}
