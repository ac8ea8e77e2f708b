package build

// Legacy recipe, step 4: generate pkg/generated/openapi/zz_generated.openapi.go.
//
// Releases of this era generated that file during `make` and never committed
// it, so the module zip lacks it and kube-apiserver exits at start with
// "unable to get openapi models". The steps mirror what Kubernetes'
// Makefile.generated_files did:
//
//  1. copy the (read-only) module out of the module cache into the wrapper,
//     made writable, and replace k8s.io/kubernetes with that copy;
//  2. find openapi-gen's inputs: every package, in k8s.io/kubernetes and in
//     the staging modules at v0.Y.Z that it requires, with a Go file carrying a
//     `+k8s:openapi-gen=` tag (test, fake and example packages excluded);
//  3. blank-import them from a build-tagged file in the wrapper so the go
//     command records their modules and checksums;
//  4. build openapi-gen from the kube-openapi version the release pins and
//     run it in the wrapper module, which resolves the input packages;
//  5. put the generated file into the copy.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

const (
	// localKubeDir is the wrapper-relative directory of the writable copy.
	localKubeDir = "kubernetes"
	// openAPIPackage is where kube-apiserver expects the generated definitions.
	openAPIPackage = "k8s.io/kubernetes/pkg/generated/openapi"
	// openAPIFileBase is the generated file's name without ".go".
	openAPIFileBase = "zz_generated.openapi"
	// openAPITag marks packages (and types) that openapi-gen describes.
	openAPITag = "+k8s:openapi-gen="
)

// prepareOpenAPIInputs copies k8s.io/kubernetes into the wrapper, downloads
// the staging modules and returns openapi-gen's input packages.
func (r *run) prepareOpenAPIInputs(ctx context.Context, kube moduleInfo, gomod *kubeGoMod, staging string) ([]string, error) {
	dst := filepath.Join(r.srcDir, localKubeDir)
	if err := r.step(ctx, "copy k8s.io/kubernetes into a writable directory", func() error {
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		return copyTree(kube.Dir, dst)
	}); err != nil {
		return nil, err
	}

	// Only staging modules that k8s.io/kubernetes requires can provide
	// packages to it. The others are samples (v1.18's k8s.io/sample-controller
	// and k8s.io/sample-cli-plugin were never published at v0.18.Z).
	var required []string
	for _, m := range gomod.Staging {
		if _, ok := gomod.Require[m]; ok {
			required = append(required, m)
		}
	}
	var stagingMods []moduleInfo
	if err := r.step(ctx, fmt.Sprintf("download %d required staging modules at %s", len(required), staging), func() error {
		args := make([]string, len(required))
		for i, m := range required {
			args[i] = m + "@" + staging
		}
		var err error
		stagingMods, err = r.downloadModules(ctx, "download staging modules", args...)
		return err
	}); err != nil {
		return nil, err
	}

	var inputs []string
	if err := r.step(ctx, "find openapi-gen input packages", func() error {
		pkgs, err := openAPIPackages(os.DirFS(dst), "k8s.io/kubernetes")
		if err != nil {
			return err
		}
		for _, m := range stagingMods {
			more, err := openAPIPackages(os.DirFS(m.Dir), m.Path)
			if err != nil {
				return err
			}
			pkgs = append(pkgs, more...)
		}
		sort.Strings(pkgs)
		if len(pkgs) == 0 {
			return fmt.Errorf("no package carries a %q tag", openAPITag)
		}
		inputs = pkgs
		return nil
	}); err != nil {
		return nil, err
	}
	r.logf("openapi-gen inputs: %d packages", len(inputs))
	return inputs, nil
}

// generateOpenAPI builds openapi-gen, runs it over inputs and installs the
// result into the writable copy of k8s.io/kubernetes. The wrapper module must
// already resolve inputs and openapi-gen (see buildInto).
func (r *run) generateOpenAPI(ctx context.Context, gomod *kubeGoMod, inputs []string) error {
	pinned := gomod.Require["k8s.io/kube-openapi"]
	if pinned == "" {
		return &BuildError{Version: r.version, Step: "build openapi-gen", Err: fmt.Errorf("k8s.io/kubernetes %s does not require k8s.io/kube-openapi", r.version)}
	}
	bin := filepath.Join(r.srcDir, "bin", "openapi-gen")
	if err := r.step(ctx, "build openapi-gen (kube-openapi "+pinned+")", func() error {
		// The wrapper's module graph selects kube-openapi (and gengo) at the
		// versions the release pins; check rather than assume.
		out, err := r.goCmd(ctx, "build openapi-gen", r.srcDir, true, "list", "-mod=mod", "-m", "-f", "{{.Version}}", "k8s.io/kube-openapi")
		if err != nil {
			return err
		}
		if got := strings.TrimSpace(string(out)); got != pinned {
			return fmt.Errorf("wrapper selects k8s.io/kube-openapi %s, k8s.io/kubernetes %s pins %s", got, r.version, pinned)
		}
		_, err = r.goCmd(ctx, "build openapi-gen", r.srcDir, false, "build", "-mod=mod", "-o", bin, "k8s.io/kube-openapi/cmd/openapi-gen")
		return err
	}); err != nil {
		return err
	}

	return r.step(ctx, "generate "+openAPIFileBase+".go", func() error {
		outBase := filepath.Join(r.srcDir, "openapi-out")
		if err := os.RemoveAll(outBase); err != nil {
			return err
		}
		header := filepath.Join(r.srcDir, "boilerplate.go.txt")
		hdr := fmt.Sprintf("/*\nGenerated for k8s.io/kubernetes %s by github.com/steadywatch/steadywatch/e2e/harness/build.\n*/\n", r.version)
		if err := os.WriteFile(header, []byte(hdr), 0o644); err != nil {
			return err
		}
		// openapi-gen resolves packages through go/build, which asks the go
		// command from the working directory: the wrapper module.
		_, err := r.command(ctx, "generate "+openAPIFileBase+".go", r.srcDir, []string{"GOFLAGS=-mod=mod"}, false, bin,
			"--input-dirs", strings.Join(inputs, ","),
			"--output-package", openAPIPackage,
			"--output-file-base", openAPIFileBase,
			"--output-base", outBase,
			"--go-header-file", header,
			// A file (not "-") makes API rule violations a report, not a failure,
			// as in Kubernetes' own build.
			"--report-filename", filepath.Join(r.srcDir, "openapi-violations.txt"),
		)
		if err != nil {
			return err
		}
		gen := filepath.Join(outBase, filepath.FromSlash(openAPIPackage), openAPIFileBase+".go")
		data, err := os.ReadFile(gen)
		if err != nil {
			return fmt.Errorf("openapi-gen produced no output: %w", err)
		}
		dstDir := filepath.Join(r.srcDir, localKubeDir, filepath.FromSlash(strings.TrimPrefix(openAPIPackage, "k8s.io/kubernetes/")))
		if err := os.MkdirAll(dstDir, 0o755); err != nil {
			return err
		}
		r.logf("generated %s.go: %d bytes", openAPIFileBase, len(data))
		if err := os.WriteFile(filepath.Join(dstDir, openAPIFileBase+".go"), data, 0o644); err != nil {
			return err
		}
		return os.RemoveAll(outBase)
	})
}

// openAPIPackages returns the import paths of the packages in fsys (the tree
// of module modPath) that have a non-test Go file carrying an openapi-gen tag
// in a comment line. Directories that are not part of the module's API
// (vendor, testdata, _ and . prefixed) or that hold test doubles and samples
// (testing, fake, example...) are skipped.
func openAPIPackages(fsys fs.FS, modPath string) ([]string, error) {
	found := map[string]bool{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		dir := path.Dir(p)
		if found[dir] {
			return nil
		}
		ok, err := hasOpenAPITag(fsys, p)
		if err != nil {
			return err
		}
		if ok {
			found[dir] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan %s for %s tags: %w", modPath, openAPITag, err)
	}
	pkgs := make([]string, 0, len(found))
	for dir := range found {
		if dir == "." {
			pkgs = append(pkgs, modPath)
		} else {
			pkgs = append(pkgs, modPath+"/"+dir)
		}
	}
	sort.Strings(pkgs)
	return pkgs, nil
}

// skipDir reports whether a directory name excludes its whole subtree.
func skipDir(name string) bool {
	if strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") {
		return true
	}
	switch name {
	case "vendor", "testdata", "testing", "fake", "fakes":
		return true
	}
	return strings.HasPrefix(name, "example")
}

// hasOpenAPITag reports whether a line of the file is a // comment carrying
// the openapi-gen tag ("// +k8s:openapi-gen=true", "//+k8s:openapi-gen=false").
func hasOpenAPITag(fsys fs.FS, p string) (bool, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if rest, ok := bytes.CutPrefix(line, []byte("//")); ok && bytes.HasPrefix(bytes.TrimSpace(rest), []byte(openAPITag)) {
			return true, nil
		}
	}
	return false, sc.Err()
}

// copyTree copies the regular files and directories under src to dst,
// writable by the owner (the module cache is read-only). Symlinks are not
// expected in module trees and are skipped.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, target)
		default:
			return nil
		}
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm()|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
