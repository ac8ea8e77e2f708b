package extcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/steadywatch/steadywatch/e2e/harness"
)

func TestExternalKubeconfigFromEnv(t *testing.T) {
	t.Setenv(EnvKubeconfig, "")
	if got := ExternalKubeconfig(); got != "" {
		t.Fatalf("unset: got %q, want \"\"", got)
	}
	t.Setenv(EnvKubeconfig, "  /tmp/kc  ")
	if got := ExternalKubeconfig(); got != "/tmp/kc" {
		t.Fatalf("got %q, want /tmp/kc", got)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	t.Setenv(EnvKubeconfig, "~/.kube/config")
	if got, want := ExternalKubeconfig(), filepath.Join(home, ".kube/config"); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestLoadMissingKubeconfig(t *testing.T) {
	_, err := Load(context.Background(), filepath.Join(t.TempDir(), "nope"))
	if !errors.Is(err, ErrKubeconfig) {
		t.Fatalf("err = %v, want ErrKubeconfig", err)
	}
}

func TestLoadUnreachableCluster(t *testing.T) {
	// A kubeconfig naming a closed loopback port: Load must fail (bounded),
	// not hand out a target that fails in every spec.
	path := filepath.Join(t.TempDir(), "kc")
	kc := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: false}}]
users: [{name: u, user: {token: s3cr3t-token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(context.Background(), path)
	if err == nil {
		t.Fatal("Load of an unreachable cluster succeeded")
	}
	if strings.Contains(err.Error(), "s3cr3t-token") {
		t.Fatalf("error leaks the token: %v", err)
	}
}

func TestExternalTargetHasNoFaultControl(t *testing.T) {
	tg := &Target{config: nil, kubeconfig: "/x"}
	if !tg.External() {
		t.Fatal("External() = false for a target without a harness cluster")
	}
	if _, err := tg.Harness(); !errors.Is(err, ErrNoFaultControl) {
		t.Fatalf("Harness() err = %v, want ErrNoFaultControl", err)
	}
	if err := tg.Stop(); err != nil {
		t.Fatalf("Stop on external: %v", err)
	}
}

// TestStartExternalAgainstRealServer points E2E_KUBECONFIG at a real
// harness apiserver's kubeconfig: Start must return an external target (no
// fault control) that reaches that server and reports its version.
func TestStartExternalAgainstRealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real kube-apiserver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := harness.Start(ctx, harness.Options{})
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	defer c.Stop()
	t.Setenv(EnvKubeconfig, c.KubeconfigPath())
	var progress strings.Builder
	tg, err := Start(ctx, harness.Options{Progress: &progress})
	if err != nil {
		t.Fatalf("Start external: %v", err)
	}
	if !tg.External() {
		t.Fatal("E2E_KUBECONFIG set but target is not external")
	}
	if tg.Version() != c.Version() {
		t.Fatalf("Version() = %q, want %q", tg.Version(), c.Version())
	}
	if tg.RESTConfig().Host != c.RESTConfig().Host {
		t.Fatalf("host %q, want %q", tg.RESTConfig().Host, c.RESTConfig().Host)
	}
	if !strings.Contains(progress.String(), "fault-control specs will be skipped") {
		t.Fatalf("progress did not say fault specs are skipped: %q", progress.String())
	}
	if strings.Contains(tg.Describe(), tg.RESTConfig().BearerToken) {
		t.Fatal("Describe leaks the token")
	}
}
