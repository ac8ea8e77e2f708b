// Command kubectl-steadywatch is a kubectl plugin ("kubectl steadywatch") that
// shows what a Kubernetes apiserver really does with resourceVersion, and lists
// and watches through the steadywatch SDK:
//
//   - probe: runs every cell of the KEP-2523 resourceVersion tables (Kubernetes
//     API Concepts, "Resource versions") against the server in a scratch
//     namespace and reports what the server did next to what the KEP says it
//     should (table or versioned JSON);
//   - list: one list with an explicit semantic through package lister, with
//     the served resourceVersion and the fallbacks taken;
//   - sync: an informer backed by the SDK that prints one JSON line when synced
//     and one per event;
//   - version: the plugin's, the SDK's, client-go's and Go's versions;
//   - options: every global (kubeconfig) flag; a command's help shows its own
//     flags first.
//
// It is a package of the SDK's module (go install
// github.com/steadywatch/steadywatch/cmd/kubectl-steadywatch@VERSION) and uses
// only what client-go already requires (clientcmd's kubeconfig flags,
// spf13/pflag), so the SDK's users inherit nothing from it. It is a
// diagnostic and demonstration tool, not a controller runtime: it keeps
// nothing between runs.
//
// Exit codes: 0 success, 1 runtime failure (server unreachable, missing
// right, list failed, not synced in time, interrupted), 2 usage error (bad
// flag or argument, no kubeconfig, a request the server refuses as given).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
