package canonical

import (
	"strings"
	"testing"
)

func TestRecognizers(t *testing.T) {
	u := obj(t, `{"spec":{"tls":{"hostname":"x"},"nullField":null,"scalar":"s"}}`)
	cases := []struct {
		name string
		r    Recognizer
		want bool
	}{
		{"HasField present", HasField("spec", "tls"), true},
		{"HasField nested", HasField("spec", "tls", "hostname"), true},
		{"HasField null counts as present", HasField("spec", "nullField"), true},
		{"HasField absent", HasField("spec", "validation"), false},
		{"HasField through a scalar", HasField("spec", "scalar", "x"), false},
		{"LacksField absent", LacksField("spec", "validation"), true},
		{"LacksField present", LacksField("spec", "tls"), false},
		{"OnlyKeys all known", OnlyKeys([]string{"spec"}, "tls", "nullField", "scalar"), true},
		{"OnlyKeys one unknown", OnlyKeys([]string{"spec"}, "tls", "nullField"), false},
		{"OnlyKeys absent map", OnlyKeys([]string{"status"}), true},
		{"OnlyKeys on a scalar", OnlyKeys([]string{"spec", "scalar"}), false},
		{"AllOf true", AllOf(HasField("spec"), HasField("spec", "tls")), true},
		{"AllOf false", AllOf(HasField("spec"), HasField("nope")), false},
		{"AllOf empty", AllOf(), true},
		{"AnyOf true", AnyOf(HasField("nope"), HasField("spec")), true},
		{"AnyOf false", AnyOf(HasField("nope")), false},
		{"AnyOf empty", AnyOf(), false},
	}
	for _, tc := range cases {
		if got := tc.r(u); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRecognizerCopiesPath(t *testing.T) {
	p := []string{"spec", "tls"}
	r := HasField(p...)
	p[1] = "validation"
	if !r(obj(t, `{"spec":{"tls":{}}}`)) {
		t.Fatal("HasField kept a reference to the caller's path slice")
	}
}

func TestMoveField(t *testing.T) {
	mv := MoveField([]string{"spec", "tls"}, []string{"spec", "validation"})
	cases := []struct {
		name, in, want, err string
	}{
		{"rename", `{"spec":{"tls":{"h":"a"},"o":1}}`, `{"spec":{"o":1,"validation":{"h":"a"}}}`, ""},
		{"absent source is a no-op", `{"spec":{"o":1}}`, `{"spec":{"o":1}}`, ""},
		{"replaces an existing target (the Gateway API versioning guide: copy TLS to Validation)", `{"spec":{"tls":{"h":"old"},"validation":{"h":"new"}}}`, `{"spec":{"validation":{"h":"old"}}}`, ""},
		{"null value moves", `{"spec":{"tls":null}}`, `{"spec":{"validation":null}}`, ""},
		{"source through a scalar", `{"spec":"s"}`, "", "read spec.tls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := obj(t, tc.in)
			err := mv(u)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := mustJSON(t, u); got != tc.want {
				t.Fatalf("got %s want %s", got, tc.want)
			}
		})
	}
	t.Run("creates parents", func(t *testing.T) {
		u := obj(t, `{"spec":{"tls":1}}`)
		if err := MoveField([]string{"spec", "tls"}, []string{"spec", "a", "b"})(u); err != nil {
			t.Fatal(err)
		}
		if got := mustJSON(t, u); got != `{"spec":{"a":{"b":1}}}` {
			t.Fatal(got)
		}
	})
	t.Run("target parent is a scalar", func(t *testing.T) {
		u := obj(t, `{"spec":{"tls":1,"a":"s"}}`)
		err := MoveField([]string{"spec", "tls"}, []string{"spec", "a", "b"})(u)
		if err == nil || !strings.Contains(err.Error(), "spec.a is a string") {
			t.Fatalf("err = %v", err)
		}
	})
}
