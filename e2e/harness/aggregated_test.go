package harness

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"strings"
	"testing"
)

func TestAggregationArgs(t *testing.T) {
	dir := t.TempDir()
	args, err := AggregationArgs(dir)
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || !strings.HasPrefix(k, "--") || v == "" {
			t.Fatalf("malformed flag %q", a)
		}
		flags[k] = v
	}
	for _, k := range []string{"--requestheader-client-ca-file", "--proxy-client-cert-file", "--proxy-client-key-file", "--client-ca-file"} {
		if _, err := os.Stat(flags[k]); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	// The proxy client certificate is signed by the requestheader CA and
	// named as the only allowed name (the client CA overlaps it).
	caPEM, _ := os.ReadFile(flags["--requestheader-client-ca-file"])
	certPEM, _ := os.ReadFile(flags["--proxy-client-cert-file"])
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA file holds no certificate")
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("client cert file holds no PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("proxy client cert does not verify as a client of the requestheader CA: %v", err)
	}
	if cert.Subject.CommonName != flags["--requestheader-allowed-names"] {
		t.Errorf("CN %q, allowed names %q", cert.Subject.CommonName, flags["--requestheader-allowed-names"])
	}
}
