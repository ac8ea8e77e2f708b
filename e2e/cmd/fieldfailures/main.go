// Command fieldfailures renders docs/field-failures.md from the Results JSON
// of a real run of the e2e/fieldfailures suite (`make field-failures` runs
// both). It only renders: it starts no server and measures nothing.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/steadywatch/steadywatch/e2e/fieldfailures"
)

func main() {
	in := flag.String("in", "", "Results JSON written by the e2e/fieldfailures suite (-fieldfailures.results)")
	out := flag.String("out", "", "markdown file to write (default: stdout)")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "fieldfailures:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	if in == "" {
		return fmt.Errorf("-in is required")
	}
	r, err := fieldfailures.Load(in)
	if err != nil {
		return err
	}
	if len(r.Rows) == 0 {
		return fmt.Errorf("%s holds no rows", in)
	}
	var b bytes.Buffer
	if err := fieldfailures.Render(&b, r); err != nil {
		return err
	}
	if out == "" {
		_, err = os.Stdout.Write(b.Bytes())
		return err
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}
