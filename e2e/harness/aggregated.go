package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/steadywatch/steadywatch/e2e/harness/certs"
)

// FlundersGVR is the resource the sample aggregated apiserver serves.
var FlundersGVR = schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1alpha1", Resource: "flunders"}

var apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// AggregationArgs writes a front-proxy PKI into dir and returns the
// kube-apiserver flags that let it proxy to aggregated apiservers: pass them
// in Options.ExtraArgs. The client CA is the front-proxy CA too (the
// aggregated apiserver reads both from the extension-apiserver-authentication
// ConfigMap), restricted by --requestheader-allowed-names.
func AggregationArgs(dir string) ([]string, error) {
	ca, err := certs.NewCA("steadywatch-front-proxy-ca")
	if err != nil {
		return nil, fmt.Errorf("harness: front-proxy CA: %w", err)
	}
	client, err := ca.Serving("front-proxy-client")
	if err != nil {
		return nil, fmt.Errorf("harness: front-proxy client cert: %w", err)
	}
	caFile := filepath.Join(dir, "front-proxy-ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		return nil, fmt.Errorf("harness: front-proxy CA: %w", err)
	}
	cert, key, err := client.WriteFiles(dir, "front-proxy-client")
	if err != nil {
		return nil, fmt.Errorf("harness: front-proxy client cert: %w", err)
	}
	return []string{
		"--requestheader-client-ca-file=" + caFile,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + cert,
		"--proxy-client-key-file=" + key,
		"--client-ca-file=" + caFile,
	}, nil
}

// AggregatedAPIServer is a k8s.io/sample-apiserver process registered with a
// cluster through an APIService (wardle.example.com/v1alpha1, flunders).
type AggregatedAPIServer struct {
	proc    *process
	log     *os.File
	logPath string
	port    int
}

// LogPath is the aggregated apiserver's log.
func (a *AggregatedAPIServer) LogPath() string { return a.logPath }

// Stop stops the process (SIGTERM, then SIGKILL after a grace period).
func (a *AggregatedAPIServer) Stop() error {
	select {
	case <-a.proc.done:
	default:
		pid := a.proc.cmd.Process.Pid
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		t := time.NewTimer(stopGrace)
		select {
		case <-a.proc.done:
			t.Stop()
		case <-t.C:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-a.proc.done
		}
	}
	return a.log.Close()
}

// StartSampleAPIServer runs binary (build.EnsureSampleAPIServer) on the
// cluster's etcd, serving on loopback with a certificate from the cluster CA,
// and registers it (insecureSkipTLSVerify: the aggregator would verify the
// certificate for wardle.default.svc): an ExternalName Service "wardle" (localhost) in default
// and the APIService v1alpha1.wardle.example.com pointing at its port. The
// cluster must have been started with AggregationArgs, and without
// --enable-aggregator-routing (endpoint routing does not resolve ExternalName
// Services). It returns once flunders can be listed through the cluster
// (bounded by ctx and a minute). Stop it when done.
func (c *Cluster) StartSampleAPIServer(ctx context.Context, binary string) (_ *AggregatedAPIServer, err error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	pair, err := c.ca.Serving("sample-apiserver")
	if err != nil {
		return nil, fmt.Errorf("harness: sample-apiserver serving cert: %w", err)
	}
	cert, key, err := pair.WriteFiles(c.dir, "sample-apiserver")
	if err != nil {
		return nil, fmt.Errorf("harness: sample-apiserver serving cert: %w", err)
	}
	logPath := filepath.Join(c.dir, "sample-apiserver.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("harness: sample-apiserver log: %w", err)
	}
	cmd := exec.Command(binary,
		"--etcd-servers="+c.etcd.Endpoint(),
		"--secure-port="+strconv.Itoa(ports[0]), "--bind-address=127.0.0.1",
		"--tls-cert-file="+cert, "--tls-private-key-file="+key,
		"--kubeconfig="+c.kubeconfig, "--authentication-kubeconfig="+c.kubeconfig, "--authorization-kubeconfig="+c.kubeconfig)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	proc, err := startProcess(cmd)
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("harness: start sample-apiserver: %w", err)
	}
	a := &AggregatedAPIServer{proc: proc, log: logf, logPath: logPath, port: ports[0]}
	defer func() {
		if err != nil {
			_ = a.Stop()
			err = fmt.Errorf("%w (log %s:\n%s)", err, logPath, tailFile(logPath, 20))
		}
	}()

	cfg := c.RESTConfig()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "wardle"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"}}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("harness: sample-apiserver Service: %w", err)
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1alpha1.wardle.example.com"},
		"spec": map[string]any{
			"group": FlundersGVR.Group, "version": FlundersGVR.Version,
			// The aggregator verifies the serving certificate for
			// wardle.default.svc, which the harness CA's loopback
			// certificates do not name; on loopback, skip verification.
			"insecureSkipTLSVerify": true,
			"groupPriorityMinimum":  int64(1000), "versionPriority": int64(15),
			"service": map[string]any{"namespace": "default", "name": "wardle", "port": int64(ports[0])},
		},
	}}
	if _, err := dyn.Resource(apiServicesGVR).Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("harness: APIService: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		_, lerr := dyn.Resource(FlundersGVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		if lerr == nil {
			c.progress("sample-apiserver on 127.0.0.1:%d registered as %s (log %s)", ports[0], FlundersGVR.GroupVersion(), logPath)
			return a, nil
		}
		select {
		case <-a.proc.done:
			return nil, errors.New("harness: sample-apiserver exited")
		case <-ctx.Done():
			return nil, fmt.Errorf("harness: flunders never listable through the aggregator: %w (last: %v)", ctx.Err(), lerr)
		case <-tick.C:
		}
	}
}
