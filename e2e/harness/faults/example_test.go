package faults_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/steadywatch/steadywatch/e2e/harness/certs"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A proxy in front of an apiserver (here a one-handler stand-in; in e2e a
// real kube-apiserver), a 410 injected on the next list, then normal service.
func Example() {
	ca, _ := certs.NewCA("example-ca")
	pair, _ := ca.Serving("serving")
	cert, _ := pair.TLSCertificate()

	apiserver := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"42"},"items":[]}`)
	}))
	apiserver.EnableHTTP2 = true
	apiserver.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	apiserver.StartTLS()
	defer apiserver.Close()
	backend, _ := url.Parse(apiserver.URL)

	p, err := faults.New(faults.Options{
		Backends:    []*url.URL{backend},
		BackendTLS:  ca.ClientTLS(),
		ServingCert: cert,
	})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	cfg := p.Config(&rest.Config{BearerToken: "token", TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM}})
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()

	p.Inject(faults.Rule{Verb: "list", Resource: "configmaps", Status: 410, Count: 1})
	_, err = cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{ResourceVersion: "1", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	fmt.Println("expired:", apierrors.IsResourceExpired(err))

	l, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	fmt.Println("then served at", l.ResourceVersion, err)

	for _, r := range p.Requests() {
		fmt.Printf("%s %s backend=%d status=%d fault=%q\n", r.Verb, r.Resource, r.Backend, r.Status, r.Fault)
	}
	// Output:
	// expired: true
	// then served at 42 <nil>
	// list configmaps backend=-1 status=410 fault="rule 1: 410 Expired"
	// list configmaps backend=0 status=200 fault=""
}
