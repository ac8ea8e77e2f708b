// Command build-apiservers builds (or finds in the cache) the kube-apiserver
// binaries the e2e suite runs against, printing progress and the resulting
// paths. With no arguments it builds build.Current and build.Legacy.
//
//	go run ./cmd/build-apiservers [versions...]
//
// Output: progress on stderr; on stdout one line per version,
// "<version> <path>", for scripts. The cache is build.CacheDir()
// ($STEADYWATCH_CACHE_DIR or e2e/.cache).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/steadywatch/steadywatch/e2e/harness/build"
)

func main() {
	timeout := flag.Duration("timeout", 45*time.Minute, "give up after this long (all versions)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: build-apiservers [-timeout d] [versions...] (default %s %s)\n", build.Current, build.Legacy)
		flag.PrintDefaults()
	}
	flag.Parse()
	versions := flag.Args()
	if len(versions) == 0 {
		versions = []string{build.Current, build.Legacy}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	fmt.Fprintf(os.Stderr, "cache: %s\n", build.CacheDir())
	failed := false
	for _, v := range versions { // one at a time: a build uses every core
		start := time.Now()
		path, err := build.Ensure(ctx, v, os.Stderr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "FAILED %s after %.1fs: %v\n", v, time.Since(start).Seconds(), err)
			failed = true
			continue
		}
		fmt.Fprintf(os.Stderr, "ok %s in %.1fs\n", v, time.Since(start).Seconds())
		fmt.Printf("%s %s\n", v, path)
	}
	if failed {
		os.Exit(1)
	}
}
