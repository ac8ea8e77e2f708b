package harness_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
)

var _ = Describe("APIServer.Pause and Resume", Ordered, func() {
	var c *harness.Cluster
	BeforeAll(func(ctx SpecContext) { c = suite.StartHarness(ctx, harness.Options{Version: current}, ownServers) })

	It("freeze the server: requests wait until Resume, then are served", func(ctx SpecContext) {
		a := c.APIServers()[0]
		cs := suite.Clientset(a.RESTConfig())
		_, err := cs.Discovery().ServerVersion()
		Expect(err).NotTo(HaveOccurred())

		Expect(a.Pause()).To(Succeed())
		DeferCleanup(a.Resume) // never leave a frozen server behind a failed assertion
		Expect(a.Running()).To(BeTrue(), "a paused server is still running")

		// A request with a short deadline times out: nobody serves it.
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err = cs.CoreV1().Namespaces().List(short, metav1.ListOptions{})
		Expect(err).To(HaveOccurred())
		Expect(errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "deadline")).To(BeTrue(), "got %v", err)

		// A request sent while paused is answered after Resume.
		answered := make(chan error, 1)
		go func() {
			_, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			answered <- err
		}()
		Consistently(answered).WithTimeout(time.Second).ShouldNot(Receive())
		Expect(a.Resume()).To(Succeed())
		Eventually(answered).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
		Expect(a.Resume()).To(Succeed(), "resuming a running server is a no-op")
	})

	It("Stop terminates a paused server gracefully (SIGTERM is delivered, no SIGKILL)", func(ctx SpecContext) {
		a := c.APIServers()[0]
		Expect(a.Pause()).To(Succeed())
		Expect(a.Stop()).To(Succeed())
		Expect(a.Running()).To(BeFalse())
		log, err := os.ReadFile(a.LogPath())
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).NotTo(ContainSubstring("signal: killed"))

		err = a.Pause()
		Expect(errors.Is(err, harness.ErrStopped)).To(BeTrue(), "Pause on a stopped server: %v", err)
		Expect(errors.Is(a.Resume(), harness.ErrStopped)).To(BeTrue())
		Expect(a.Start(ctx)).To(Succeed())
	})
})
