package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corev1 "k8s.io/api/core/v1"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/certs"
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "wardle")
	fpCA, err := certs.NewCA("front-proxy-ca")
	must(err)
	fpClient, err := fpCA.Serving("front-proxy-client")
	must(err)
	must(os.WriteFile(filepath.Join(dir, "fp-ca.crt"), fpCA.CertPEM, 0o600))
	fpCert, fpKey, err := fpClient.WriteFiles(dir, "fp-client")
	must(err)
	c, err := harness.Start(ctx, harness.Options{Version: "v1.37.2", Progress: os.Stdout, ExtraArgs: []string{
		"--requestheader-client-ca-file=" + filepath.Join(dir, "fp-ca.crt"),
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + fpCert, "--proxy-client-key-file=" + fpKey,
		"--client-ca-file=" + filepath.Join(dir, "fp-ca.crt"),
	}})
	must(err)
	defer c.Stop()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	serving, err := c.CA().Serving("wardle")
	must(err)
	sc, sk, err := serving.WriteFiles(dir, "wardle")
	must(err)
	cmd := exec.Command("/tmp/h14-sample/wardle", "--etcd-servers="+c.Etcd().Endpoint(), "--secure-port="+strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--tls-cert-file="+sc, "--tls-private-key-file="+sk, "--kubeconfig="+c.KubeconfigPath(),
		"--authentication-kubeconfig="+c.KubeconfigPath(), "--authorization-kubeconfig="+c.KubeconfigPath())
	logf, _ := os.Create(filepath.Join(dir, "wardle.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	must(cmd.Start())
	defer cmd.Process.Kill()
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	_, err = cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "wardle"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"}}, metav1.CreateOptions{})
	must(err)
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	apisvc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1alpha1.wardle.example.com"},
		"spec": map[string]any{"group": "wardle.example.com", "version": "v1alpha1", "insecureSkipTLSVerify": true,
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"service": map[string]any{"namespace": "default", "name": "wardle", "port": int64(port)}},
	}}
	_, err = dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}).Create(ctx, apisvc, metav1.CreateOptions{})
	must(err)
	flunders := dyn.Resource(schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1alpha1", Resource: "flunders"}).Namespace("default")
	var lerr error
	for i := 0; i < 20; i++ {
		_, lerr = flunders.List(ctx, metav1.ListOptions{})
		if lerr == nil {
			break
		}
		time.Sleep(time.Second)
	}
	fmt.Println("list through aggregator:", lerr)
	if lerr != nil {
		as, _ := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}).Get(ctx, "v1alpha1.wardle.example.com", metav1.GetOptions{})
		fmt.Println("status:", as.Object["status"])
		out, _ := exec.Command("sh", "-c", "grep -i wardle "+c.Dir()+"/apiserver-0.log | tail -5").CombinedOutput()
		fmt.Println(string(out))
		return
		b, _ := os.ReadFile(filepath.Join(dir, "wardle.log"))
		fmt.Println(string(b[max(0, len(b)-3000):]))
		return
	}
	_, err = flunders.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
		"metadata": map[string]any{"name": "f1"}}}, metav1.CreateOptions{})
	fmt.Println("create:", err)
	t := true
	w, err := flunders.Watch(ctx, metav1.ListOptions{SendInitialEvents: &t, AllowWatchBookmarks: true, ResourceVersionMatch: "NotOlderThan"})
	fmt.Println("streaming watch:", err)
	if err == nil {
		tm := time.After(5 * time.Second)
		for done := false; !done; {
			select {
			case ev := <-w.ResultChan():
				fmt.Println("event", ev.Type)
			case <-tm:
				done = true
			}
		}
	}
}
