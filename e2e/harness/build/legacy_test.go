package build

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/fstest"
)

func TestOpenAPIPackages(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	fsys := fstest.MapFS{
		// package-level tag in doc.go
		"pkg/apis/core/v1/doc.go":   file("// +k8s:openapi-gen=true\n\npackage v1\n"),
		"pkg/apis/core/v1/types.go": file("package v1\n"),
		// type-level opt-out only: still an input (as in Kubernetes' Makefile)
		"pkg/apis/apps/types.go": file("package apps\n\n//+k8s:openapi-gen=false\ntype X struct{}\n"),
		// indented comment inside a type
		"pkg/config/v1alpha1/types.go": file("package v1alpha1\n\ntype T struct {\n\t// +k8s:openapi-gen=true\n\tF int\n}\n"),
		// module root package
		"doc.go": file("// +k8s:openapi-gen=true\npackage root\n"),
		// not tags: untagged, a string literal, another tag, a test file
		"pkg/untagged/a.go":      file("// +k8s:deepcopy-gen=package\npackage untagged\n"),
		"pkg/literal/a.go":       file("package literal\n\nvar s = \"+k8s:openapi-gen=true\"\n"),
		"pkg/onlytest/a_test.go": file("// +k8s:openapi-gen=true\npackage onlytest\n"),
		"pkg/notgo/README.md":    file("// +k8s:openapi-gen=true\n"),
		// excluded trees
		"pkg/apis/core/fake/doc.go":          file("// +k8s:openapi-gen=true\npackage fake\n"),
		"pkg/testing/doc.go":                 file("// +k8s:openapi-gen=true\npackage testing\n"),
		"pkg/apis/example/v1/doc.go":         file("// +k8s:openapi-gen=true\npackage v1\n"),
		"pkg/apis/example2/v1/doc.go":        file("// +k8s:openapi-gen=true\npackage v1\n"),
		"examples/client-go/doc.go":          file("// +k8s:openapi-gen=true\npackage clientgo\n"),
		"pkg/x/testdata/doc.go":              file("// +k8s:openapi-gen=true\npackage testdata\n"),
		"vendor/github.com/y/doc.go":         file("// +k8s:openapi-gen=true\npackage y\n"),
		"_output/local/go/src/k8s.io/doc.go": file("// +k8s:openapi-gen=true\npackage k8s\n"),
		".git/doc.go":                        file("// +k8s:openapi-gen=true\npackage git\n"),
	}
	got, err := openAPIPackages(fsys, "k8s.io/kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"k8s.io/kubernetes",
		"k8s.io/kubernetes/pkg/apis/apps",
		"k8s.io/kubernetes/pkg/apis/core/v1",
		"k8s.io/kubernetes/pkg/config/v1alpha1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("openAPIPackages =\n%v\nwant\n%v", got, want)
	}
}

func TestCopyTreeMakesWritableCopy(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(filepath.Join(src, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a", "b", "f.go"), []byte("package b\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dst, "a", "b", "f.go")
	data, err := os.ReadFile(p)
	if err != nil || string(data) != "package b\n" {
		t.Fatalf("copy: %q, %v", data, err)
	}
	if err := os.WriteFile(p, []byte("package b // edited\n"), 0o644); err != nil {
		t.Errorf("copy is not writable: %v", err)
	}
}
