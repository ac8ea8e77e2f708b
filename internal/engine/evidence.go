package engine

import "github.com/steadywatch/steadywatch/fallback"

// Evidence is what a response proves about resourceVersionMatch support.
type Evidence int

const (
	// NoEvidence: the response proves nothing.
	NoEvidence Evidence = iota
	// EvidenceIgnored: the server ignored resourceVersionMatch.
	EvidenceIgnored
	// EvidenceHonoured: the server honoured resourceVersionMatch.
	EvidenceHonoured
)

// EvidenceOf returns what s proves about resourceVersionMatch support.
// served compares ListMeta.resourceVersion with the requested one
// (Incomparable when there is none). Only requests that carried the match
// (s.Match != MatchIgnored) and no continue token are evidence:
//
//   - Exact(N) without limit served at another RV: ignored (KEP-2523: "verify that the
//     ResourceVersion in the ListMeta ... matches").
//   - NotOlderThan(N) with a limit answered 410: ignored (a server honouring the
//     match serves NotOlderThan, which is never 410; legacy applies Exact).
//   - NotOlderThan(N) with a limit served at an RV newer than N: honoured (a legacy
//     server applies Exact with a limit and serves exactly N).
func EvidenceOf(s Situation, served fallback.Comparison) Evidence {
	s = s.normalize()
	if s.Match == MatchIgnored || s.HasContinue {
		return NoEvidence
	}
	switch {
	case s.Semantic == fallback.Exact && !s.HasLimit && s.Class == fallback.ServedNewerThanExact:
		return EvidenceIgnored
	case s.Semantic == fallback.NotOlderThan && s.HasLimit && s.Class == fallback.Gone:
		return EvidenceIgnored
	case s.Semantic == fallback.NotOlderThan && s.HasLimit && s.Class == fallback.OK && served == fallback.Newer:
		return EvidenceHonoured
	}
	return NoEvidence
}
