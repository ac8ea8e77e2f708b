package vocab

import "testing"

func TestCompareRV(t *testing.T) {
	cases := []struct {
		a, b string
		want Comparison
	}{
		{"10", "9", Newer}, {"9", "10", Older}, {"10", "10", Same}, {"010", "10", Same},
		{"abc", "abc", Same}, {"abc", "10", Incomparable}, {"", "", Incomparable}, {"-1", "1", Incomparable},
		{"18446744073709551615", "1", Newer},
	}
	for _, c := range cases {
		if got := CompareRV(c.a, c.b); got != c.want {
			t.Errorf("CompareRV(%q,%q)=%v want %v", c.a, c.b, got, c.want)
		}
	}
}
