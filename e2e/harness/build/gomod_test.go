package build

import (
	"errors"
	"go/parser"
	"go/token"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
)

const kubeGoModSample = `// This is a generated file. Do not edit directly.

module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
	github.com/google/go-cmp v0.7.0
	k8s.io/api v0.0.0
	k8s.io/kube-openapi v0.0.0-20200410145947-61e04a5be9a6
)

require github.com/json-iterator/go v1.1.8 // indirect

replace (
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/apimachinery => ./staging/src/k8s.io/apimachinery
	github.com/google/go-cmp => github.com/google/go-cmp v0.6.0
	example.com/local => ./hack/tools/local
)

replace k8s.io/sample-apiserver => ./staging/src/k8s.io/sample-apiserver
`

func TestParseKubeGoMod(t *testing.T) {
	m, err := parseKubeGoMod([]byte(kubeGoModSample))
	if err != nil {
		t.Fatal(err)
	}
	wantStaging := []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/client-go", "k8s.io/sample-apiserver"}
	if !reflect.DeepEqual(m.Staging, wantStaging) {
		t.Errorf("Staging = %v, want %v (only ./staging replaces, sorted)", m.Staging, wantStaging)
	}
	if m.GoVersion != "1.26.0" {
		t.Errorf("GoVersion = %q", m.GoVersion)
	}
	if got := m.Require["k8s.io/kube-openapi"]; got != "v0.0.0-20200410145947-61e04a5be9a6" {
		t.Errorf("Require[kube-openapi] = %q", got)
	}
	if got := m.Require["github.com/json-iterator/go"]; got != "v1.1.8" {
		t.Errorf("Require[json-iterator] = %q (indirect requires count too)", got)
	}
}

func TestParseKubeGoModRejects(t *testing.T) {
	for name, gomod := range map[string]string{
		"other module": "module example.com/x\n\nreplace k8s.io/api => ./staging/src/k8s.io/api\n",
		"no staging":   "module k8s.io/kubernetes\n\nrequire k8s.io/api v0.18.19\n",
		"syntax":       "module k8s.io/kubernetes\n\nreplace (\n",
	} {
		if _, err := parseKubeGoMod([]byte(gomod)); err == nil {
			t.Errorf("%s: parseKubeGoMod succeeded, want error", name)
		}
	}
}

func TestWrapperGoModParsesBack(t *testing.T) {
	w := wrapperModule{
		Version:        "v1.18.19",
		GoVersion:      "1.13",
		Staging:        []string{"k8s.io/api", "k8s.io/client-go"},
		StagingVersion: "v0.18.19",
		KubernetesDir:  "./kubernetes",
		Extra:          legacyRecipe().extra,
	}
	f, err := modfile.Parse("go.mod", w.goMod(), nil)
	if err != nil {
		t.Fatalf("generated go.mod does not parse: %v\n%s", err, w.goMod())
	}
	if f.Module.Mod.Path != wrapperModulePath || f.Go.Version != "1.13" {
		t.Errorf("module %q go %q", f.Module.Mod.Path, f.Go.Version)
	}
	if len(f.Require) != 1 || f.Require[0].Mod.Path != "k8s.io/kubernetes" || f.Require[0].Mod.Version != "v1.18.19" {
		t.Errorf("require = %+v, want only k8s.io/kubernetes v1.18.19", f.Require)
	}
	got := map[string]string{}
	for _, r := range f.Replace {
		got[r.Old.Path] = strings.TrimSpace(r.New.Path + " " + r.New.Version)
	}
	want := map[string]string{
		"k8s.io/api":                    "k8s.io/api v0.18.19",
		"k8s.io/client-go":              "k8s.io/client-go v0.18.19",
		"k8s.io/kubernetes":             "./kubernetes",
		"vbom.ml/util":                  "github.com/fvbommel/util v0.0.0-20160121211510-db5cfe13f5cc",
		"github.com/modern-go/reflect2": "github.com/modern-go/reflect2 v1.0.2",
		"github.com/json-iterator/go":   "github.com/json-iterator/go v1.1.12",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("replaces = %v\nwant %v", got, want)
	}
}

func TestWrapperGoModPlainHasNoLocalReplace(t *testing.T) {
	w := wrapperModule{Version: "v1.36.3", GoVersion: "1.26.0", Staging: []string{"k8s.io/api"}, StagingVersion: "v0.36.3"}
	f, err := modfile.Parse("go.mod", w.goMod(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Replace) != 1 || f.Replace[0].New.Path != "k8s.io/api" || f.Replace[0].New.Version != "v0.36.3" {
		t.Errorf("replaces = %+v, want only k8s.io/api => k8s.io/api v0.36.3", f.Replace)
	}
}

func TestLdflags(t *testing.T) {
	date := time.Date(2026, 7, 1, 12, 30, 0, 0, time.FixedZone("x", 3600))
	for _, tc := range []struct{ version, major, minor string }{
		{"v1.36.3", "1", "36"},
		{"v1.18.19", "1", "18"},
		{"v1.37.0-rc.1", "1", "37"},
	} {
		got, err := ldflags(tc.version, date)
		if err != nil {
			t.Fatalf("%s: %v", tc.version, err)
		}
		fields := strings.Fields(got)
		xs := map[string]bool{}
		for i, f := range fields {
			if f == "-X" && i+1 < len(fields) {
				xs[fields[i+1]] = true
			}
		}
		for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/kubernetes/pkg/version", "k8s.io/client-go/pkg/version"} {
			for _, kv := range []string{
				"gitVersion=" + tc.version, "gitMajor=" + tc.major, "gitMinor=" + tc.minor,
				"gitTreeState=archive", "buildDate=2026-07-01T11:30:00Z",
			} {
				if !xs[pkg+"."+kv] {
					t.Errorf("%s: ldflags lack -X %s.%s: %s", tc.version, pkg, kv, got)
				}
			}
		}
		if len(xs) != 15 {
			t.Errorf("%s: %d -X flags, want 15", tc.version, len(xs))
		}
	}
}

func TestLdflagsRejectsBadVersions(t *testing.T) {
	for _, v := range []string{"", "1.36.3", "v1.36", "v1.36.3+build", "master"} {
		if _, err := ldflags(v, time.Now()); !errors.Is(err, ErrInvalidVersion) {
			t.Errorf("ldflags(%q) err = %v, want ErrInvalidVersion", v, err)
		}
	}
}

func TestRecipeFor(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"v1.36.3", "plain"},
		{"v1.23.0", "plain"},
		{"v1.22.17", "openapi"},
		{"v1.20.0", "openapi"},
		{"v1.19.16", "legacy"},
		{"v1.19.0", "legacy"},
		{"v1.18.19", "legacy"},
		{"v1.18.0", "legacy"},
		{Current, "plain"},
		{Previous, "plain"},
		{Legacy, "legacy"},
		{Floor, "legacy"},
		{Floor17, "legacy"},
		{"v1.16.0", "legacy"},
	} {
		v, want := tc.version, tc.want
		rc, err := recipeFor(v)
		if err != nil || rc.name != want {
			t.Errorf("recipeFor(%s) = %q, %v; want %q", v, rc.name, err, want)
		}
	}
	for _, v := range []string{"v1.15.12", "v2.0.0", "1.36.3", "v1.36"} {
		if _, err := recipeFor(v); !errors.Is(err, ErrInvalidVersion) {
			t.Errorf("recipeFor(%s) err = %v, want ErrInvalidVersion", v, err)
		}
	}
}

func TestStagingVersion(t *testing.T) {
	for v, want := range map[string]string{"v1.36.3": "v0.36.3", "v1.18.19": "v0.18.19", "v1.37.0-rc.1": "v0.37.0-rc.1"} {
		if got, err := stagingVersion(v); err != nil || got != want {
			t.Errorf("stagingVersion(%s) = %q, %v; want %q", v, got, err, want)
		}
	}
}

func TestInputsSourceIsTaggedGo(t *testing.T) {
	pkgs := []string{"k8s.io/api/core/v1", "k8s.io/kubernetes/pkg/apis/core"}
	src := inputsSource(pkgs)
	f, err := parser.ParseFile(token.NewFileSet(), inputsFile, src, parser.ParseComments)
	if err != nil {
		t.Fatalf("not valid Go: %v\n%s", err, src)
	}
	if !strings.HasPrefix(string(src), "//go:build "+inputsTag+"\n") {
		t.Errorf("missing build constraint:\n%s", src)
	}
	var got []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if imp.Name == nil || imp.Name.Name != "_" {
			t.Errorf("import %s is not blank", p)
		}
		got = append(got, p)
	}
	if !reflect.DeepEqual(got, pkgs) {
		t.Errorf("imports = %v, want %v", got, pkgs)
	}
}

func TestDecodeModuleInfos(t *testing.T) {
	out := []byte(`{
	"Path": "k8s.io/api",
	"Version": "v0.18.19",
	"GoMod": "/m/cache/download/k8s.io/api/@v/v0.18.19.mod",
	"Dir": "/m/k8s.io/api@v0.18.19"
}
{
	"Path": "k8s.io/sample-controller",
	"Version": "v0.18.19",
	"Error": "403 Forbidden"
}
`)
	got, err := decodeModuleInfos(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []moduleInfo{
		{Path: "k8s.io/api", Version: "v0.18.19", GoMod: "/m/cache/download/k8s.io/api/@v/v0.18.19.mod", Dir: "/m/k8s.io/api@v0.18.19"},
		{Path: "k8s.io/sample-controller", Version: "v0.18.19", Error: "403 Forbidden"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decodeModuleInfos = %+v, want %+v", got, want)
	}
	if _, err := decodeModuleInfos([]byte("{not json")); err == nil {
		t.Error("garbage decoded without error")
	}
}
