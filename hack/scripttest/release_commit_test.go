// Package scripttest tests the shell scripts of hack/ on throwaway git
// repositories.
package scripttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo is a throwaway git repository holding a copy of hack/release-commit.sh.
type repo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	r := &repo{t: t, dir: t.TempDir()}
	script, err := os.ReadFile("../release-commit.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(r.dir, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "hack", "release-commit.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = r.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes CHANGELOG.md and commits it, returning the commit.
func (r *repo) commit(changelog string) string {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, "CHANGELOG.md"), []byte(changelog), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "change")
	return r.git("rev-parse", "HEAD")
}

// run runs the script in dir, returning its stdout, stderr and success.
func run(t *testing.T, dir string, args ...string) (string, string, bool) {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, "hack", "release-commit.sh"), args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return strings.TrimSpace(out.String()), strings.TrimSpace(errOut.String()), err == nil
}

const head = "# Changelog\n\n## [Unreleased]\n\n- something\n\n"

func TestReleaseCommitIsTheCommitThatDatedTheSection(t *testing.T) {
	r := newRepo(t)
	r.commit(head + "## [0.1.0]\n\n- first\n")                        // the section, not yet dated
	dated := r.commit(head + "## [0.1.0] - 2026-11-27\n\n- first\n")  // dated here
	r.commit(head + "- more\n\n## [0.1.0] - 2026-11-27\n\n- first\n") // later work
	if out, errOut, ok := run(t, r.dir, "v0.1.0"); !ok || out != dated {
		t.Errorf("v0.1.0: %q %q %v, want %s", out, errOut, ok, dated)
	}
	if out, errOut, ok := run(t, r.dir, "--last"); !ok || out != "v0.1.0 "+dated {
		t.Errorf("--last: %q %q %v, want v0.1.0 %s", out, errOut, ok, dated)
	}
	// A newer dated release is the last one; each version keeps its commit.
	second := r.commit(head + "## [0.2.0] - 2026-12-04\n\n- second\n\n## [0.1.0] - 2026-11-27\n\n- first\n")
	if out, _, ok := run(t, r.dir, "--last"); !ok || out != "v0.2.0 "+second {
		t.Errorf("--last after v0.2.0: %q, want v0.2.0 %s", out, second)
	}
	if out, _, ok := run(t, r.dir, "v0.1.0"); !ok || out != dated {
		t.Errorf("v0.1.0 after v0.2.0: %q, want %s", out, dated)
	}
}

func TestReleaseCommitRedatedSectionIsTheNewestDating(t *testing.T) {
	r := newRepo(t)
	r.commit(head + "## [0.1.0] - 2026-11-27\n")
	r.commit(head + "## [0.1.0]\n") // undated again
	redated := r.commit(head + "## [0.1.0] - 2026-11-27\n")
	if out, _, ok := run(t, r.dir, "v0.1.0"); !ok || out != redated {
		t.Errorf("v0.1.0: %q, want the commit that dated it last, %s", out, redated)
	}
}

func TestReleaseCommitFailsSayingWhy(t *testing.T) {
	r := newRepo(t)
	r.commit(head + "## [0.1.0]\n\n- undated\n")
	for _, tc := range []struct{ arg, want string }{
		{"v0.1.0", "is not dated"},
		{"v0.2.0", "no section ## [0.2.0]"},
		{"0.1.0", "not a semantic version"},
		{"--last", "no dated release section"},
	} {
		if out, errOut, ok := run(t, r.dir, tc.arg); ok || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: ok=%v out=%q err=%q, want a failure saying %q", tc.arg, ok, out, errOut, tc.want)
		}
	}
}

// A shallow clone's oldest commit has no parent, so it seems to add the
// whole CHANGELOG: it must not be taken for the commit that dated it.
func TestReleaseCommitInAShallowClone(t *testing.T) {
	r := newRepo(t)
	r.commit(head + "## [0.1.0] - 2026-11-27\n")
	for i := 0; i < 3; i++ {
		r.commit(head + strings.Repeat("- more\n", i+1) + "\n## [0.1.0] - 2026-11-27\n")
	}
	clone := filepath.Join(t.TempDir(), "shallow")
	r.git("clone", "-q", "--depth", "2", "file://"+r.dir, clone)
	if out, errOut, ok := run(t, clone, "v0.1.0"); ok || !strings.Contains(errOut, "shallow") {
		t.Errorf("shallow clone: ok=%v out=%q err=%q, want a failure naming the shallow clone", ok, out, errOut)
	}
}
