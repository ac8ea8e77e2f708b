package fallback

// RetriedByClientGo exposes retriedByClientGo for a GET to the tests.
func RetriedByClientGo(err error) bool { return retriedByClientGo(err, true) }
