package fieldfailures_test

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/steadywatch/steadywatch/e2e/fieldfailures"
	"github.com/steadywatch/steadywatch/e2e/harness"
	"github.com/steadywatch/steadywatch/e2e/harness/faults"
	"github.com/steadywatch/steadywatch/e2e/internal/suite"
)

// watch410Window is how long the three clients are observed.
const watch410Window = 30 * time.Second

// A server that answers every plain watch 410 Expired (as a watch ERROR event,
// like the watch cache) and refuses streaming lists with 422 (like a server
// with the WatchList gate off): no client can ever watch, so every client
// lists again and again. steadywatch must not send more list and watch
// requests than stock client-go does in the same run: its relists back off
// (the reflector between two relists with no watch event in between; the
// drop-in informer through client-go's own backoff) and, once the 422 is
// observed, it does not ask for a streaming list again.
var _ = Describe("410 on every plain watch, streaming lists refused", Label("field-failures", "needs-faults"), Ordered, func() {
	It("steadywatch sends no more list and watch requests in 30 s than stock client-go", func(ctx SpecContext) {
		c := suite.StartHarness(ctx, harness.Options{Version: serverVersion()}, "needs the harness's fault proxy in front of "+serverVersion())
		cs := suite.Clientset(c.APIServers()[0].RESTConfig())
		ns := suite.NewNamespace(ctx, cs, "w410")
		suite.CreateConfigMaps(ctx, cs, ns, objects, suite.IndexData)

		var clients []*client
		for _, name := range fieldfailures.Clients {
			p, cfg, err := c.NewProxy(ctx)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Close)
			p.Inject(faults.Rule{Verb: "watch", Resource: "configmaps", Namespace: ns, Query: map[string]string{"sendInitialEvents": "true"},
				Status: 422, Message: faults.SendInitialEventsForbiddenMessage})
			p.Inject(faults.Rule{Verb: "watch", Resource: "configmaps", Namespace: ns, Status: 410, AsWatchEvent: true, Match: plainWatch})
			clients = append(clients, startClientOn(configMaps, name, p, cfg, ns, nil))
		}
		// Observe the window (a measurement, not a synchronisation).
		select {
		case <-ctx.Done():
			return
		case <-time.After(watch410Window):
		}
		counted := map[string]int{}
		var lines []string
		for _, cl := range clients {
			cl.stop()
			var lists, streaming, watches int
			for _, r := range cl.requests() {
				q, _ := url.ParseQuery(r.RawQuery)
				switch {
				case r.Verb == "list":
					lists++
				case r.Verb == "watch" && isStreamingList(q):
					streaming++
				case r.Verb == "watch":
					watches++
				}
			}
			_, synced := cl.synced()
			counted[cl.name] = lists + streaming + watches
			lines = append(lines, fmt.Sprintf("%s: %d requests (%d lists, %d streaming lists, %d watches), synced %v",
				cl.name, counted[cl.name], lists, streaming, watches, synced))
			if isSteadywatch(cl.name) {
				Expect(synced).To(BeTrue(), "%s synced from its lists", cl.name)
			}
		}
		summary := fmt.Sprintf("%s, %s window: %s", serverVersion(), watch410Window, strings.Join(lines, "; "))
		fmt.Fprintln(GinkgoWriter, summary)
		AddReportEntry("410 on every plain watch, streaming refused: list+watch requests", summary)
		for _, name := range []string{fieldfailures.DropIn, fieldfailures.Reflector} {
			Expect(counted[name]).To(BeNumerically("<=", counted[fieldfailures.Stock]),
				"%s sent more list+watch requests than stock client-go: %s", name, summary)
		}
	})
})
