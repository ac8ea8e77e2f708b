package compat

// Version is a parsed apiserver version such as v1.18.19, v1.27.3-eks-4f4795d or v1.29.0+k3s1.
type Version struct {
	Major, Minor, Patch int
	// Raw is the gitVersion string exactly as the server reported it.
	Raw string
}

// IsZero reports whether the version is unknown.
func (v Version) IsZero() bool { return v.Major == 0 && v.Minor == 0 && v.Patch == 0 }
