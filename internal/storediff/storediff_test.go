package storediff

import (
	"slices"
	"testing"
)

func TestCompare(t *testing.T) {
	want := map[string]string{"a": "1", "b": "2", "c": "3", "e": "5"}
	got := map[string]string{"a": "1", "b": "9", "d": "4", "e": "6"}
	d := Compare(want, got)
	if !slices.Equal(d.Missing, []string{"c"}) || !slices.Equal(d.Extra, []string{"d"}) || !slices.Equal(d.Differ, []string{"b", "e"}) || d.Empty() {
		t.Fatalf("%+v", d)
	}
	if d := Compare(want, want); !d.Empty() {
		t.Fatalf("equal maps: %+v", d)
	}
}
