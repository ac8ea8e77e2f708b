package vocab

// Public sources the SDK implements, cited in rows, errors and docs by these
// names. A reader can open each one; nothing here refers to private notes.
const (
	// SourceKEP2523 is KEP-2523 "Consistent resource version semantics", sections
	// "Backward Compatibility" and "Design Details".
	SourceKEP2523 = "KEP-2523 (https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/2523-consistent-resource-version-semantics)"
	// SourceResourceVersions is the Kubernetes API Concepts page, section "Resource versions".
	SourceResourceVersions = "Kubernetes API Concepts, \"Resource versions\" (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions)"
	// SourceChunks is the Kubernetes API Concepts page, section "Retrieving large results sets in chunks".
	SourceChunks = "Kubernetes API Concepts, \"Retrieving large results sets in chunks\" (https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks)"
	// SourceWatchBookmarks is the Kubernetes API Concepts page, sections "Watch bookmarks" and "Streaming lists".
	SourceWatchBookmarks = "Kubernetes API Concepts, \"Watch bookmarks\" and \"Streaming lists\" (https://kubernetes.io/docs/reference/using-api/api-concepts/#streaming-lists)"
)
