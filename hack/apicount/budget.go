package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// budget is the content of the budget file: for each measure ("names",
// "fields"), the recorded current value (the ratchet) and the target.
type budget struct {
	current, target map[string]int
	lines           []string // the file as read, to rewrite it in place
}

// measures are the budget's keys, in the order they are reported.
var measures = []string{"names", "fields"}

func (m measurement) value(measure string) int {
	if measure == "names" {
		return m.totalNames()
	}
	n, _, _, _ := m.optionFields()
	return n
}

// readBudget reads lines "KEY VALUE" (KEY: names, fields, target-names,
// target-fields); "#" starts a comment.
func readBudget(file string) (budget, error) {
	f, err := os.Open(file)
	if err != nil {
		return budget{}, err
	}
	defer f.Close()
	b := budget{current: map[string]int{}, target: map[string]int{}}
	s := bufio.NewScanner(f)
	for ln := 1; s.Scan(); ln++ {
		b.lines = append(b.lines, s.Text())
		line, _, _ := strings.Cut(s.Text(), "#")
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		if len(fs) != 2 {
			return budget{}, fmt.Errorf("%s:%d: want \"KEY VALUE\", got %q", file, ln, s.Text())
		}
		v, err := strconv.Atoi(fs[1])
		if err != nil || v < 0 {
			return budget{}, fmt.Errorf("%s:%d: %q is not a count", file, ln, fs[1])
		}
		key, isTarget := strings.CutPrefix(fs[0], "target-")
		if !known(key) {
			return budget{}, fmt.Errorf("%s:%d: unknown key %q", file, ln, fs[0])
		}
		if isTarget {
			b.target[key] = v
		} else {
			b.current[key] = v
		}
	}
	if err := s.Err(); err != nil {
		return budget{}, err
	}
	for _, k := range measures {
		if _, ok := b.current[k]; !ok {
			return budget{}, fmt.Errorf("%s: no recorded value for %q", file, k)
		}
		if _, ok := b.target[k]; !ok {
			return budget{}, fmt.Errorf("%s: no target for %q", file, k)
		}
	}
	return b, nil
}

func known(key string) bool {
	for _, k := range measures {
		if k == key {
			return true
		}
	}
	return false
}

// check reports each measure against the budget and says whether every
// measure is within its recorded value.
func (b budget) check(w io.Writer, m measurement) bool {
	ok := true
	for _, k := range measures {
		v, cur, tgt := m.value(k), b.current[k], b.target[k]
		switch {
		case v > cur:
			ok = false
			fmt.Fprintf(w, "FAIL %s: %d, above the recorded %d (target %d): the public API may only shrink; remove %d, or raise the recorded value in hack/api-budget.txt with a reason\n", k, v, cur, tgt, v-cur)
		case v < cur:
			fmt.Fprintf(w, "ok   %s: %d, below the recorded %d (target %d): lock it in with hack/apicount.sh -update\n", k, v, cur, tgt)
		default:
			fmt.Fprintf(w, "ok   %s: %d = recorded (target %d, %d to go)\n", k, v, tgt, max(v-tgt, 0))
		}
	}
	return ok
}

// lower rewrites the budget file with each recorded value lowered to the
// measured count where that is smaller; it never raises one.
func (b budget) lower(file string, m measurement) error {
	var sb strings.Builder
	for _, line := range b.lines {
		body, comment, hasComment := strings.Cut(line, "#")
		fs := strings.Fields(body)
		if len(fs) == 2 && known(fs[0]) {
			if v := m.value(fs[0]); v < b.current[fs[0]] {
				line = fs[0] + " " + strconv.Itoa(v)
				if hasComment {
					line += " #" + comment
				}
				b.current[fs[0]] = v
			}
		}
		sb.WriteString(line + "\n")
	}
	return os.WriteFile(file, []byte(sb.String()), 0o644)
}
