package canonical

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Recogniser building blocks. Paths are field names from the object's root,
// as in unstructured.NestedFieldNoCopy: HasField("spec", "tls").

// HasField claims objects in which the field at path is present (any value,
// including null).
func HasField(path ...string) Recognizer {
	path = clonePath(path)
	return func(obj *unstructured.Unstructured) bool {
		_, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
		return found && err == nil
	}
}

// LacksField claims objects in which the field at path is absent.
func LacksField(path ...string) Recognizer {
	has := HasField(path...)
	return func(obj *unstructured.Unstructured) bool { return !has(obj) }
}

// OnlyKeys claims objects whose map at path has no keys other than keys (an
// absent map has none). It is how a shape says "I know every field here", so
// that a field from a future shape makes the object unrecognised instead of
// being silently dropped or misread. A value at path that is not a map is not
// claimed.
func OnlyKeys(path []string, keys ...string) Recognizer {
	path = clonePath(path)
	allowed := make(map[string]bool, len(keys))
	for _, k := range keys {
		allowed[k] = true
	}
	return func(obj *unstructured.Unstructured) bool {
		v, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
		if err != nil {
			return false
		}
		if !found || v == nil {
			return true
		}
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for k := range m {
			if !allowed[k] {
				return false
			}
		}
		return true
	}
}

// AllOf claims objects that every r claims (all of none: every object).
func AllOf(rs ...Recognizer) Recognizer {
	rs = append([]Recognizer(nil), rs...)
	return func(obj *unstructured.Unstructured) bool {
		for _, r := range rs {
			if !r(obj) {
				return false
			}
		}
		return true
	}
}

// AnyOf claims objects that at least one r claims.
func AnyOf(rs ...Recognizer) Recognizer {
	rs = append([]Recognizer(nil), rs...)
	return func(obj *unstructured.Unstructured) bool {
		for _, r := range rs {
			if r(obj) {
				return true
			}
		}
		return false
	}
}

// MoveField returns the conversion that renames a field: if the object has a
// field at from, its value is set at to (creating parent maps, replacing any
// value already there) and from is removed. Objects without from are left
// unchanged. the Gateway API versioning guide's BackendTLSPolicy example is
// MoveField([]string{"spec", "tls"}, []string{"spec", "validation"}), and its
// reverse conversion is the same call with the paths swapped.
func MoveField(from, to []string) ConvertFunc {
	from, to = clonePath(from), clonePath(to)
	return func(obj *unstructured.Unstructured) error {
		v, found, err := unstructured.NestedFieldNoCopy(obj.Object, from...)
		if err != nil {
			return fmt.Errorf("read %s: %w", strings.Join(from, "."), err)
		}
		if !found {
			return nil
		}
		unstructured.RemoveNestedField(obj.Object, from...)
		// SetNestedField deep-copies v; the value was removed from its old
		// place, so hand it over as is instead.
		if err := setNoCopy(obj.Object, v, to...); err != nil {
			return fmt.Errorf("set %s: %w", strings.Join(to, "."), err)
		}
		return nil
	}
}

// setNoCopy sets obj[path] = v without copying v, creating parent maps.
func setNoCopy(obj map[string]any, v any, path ...string) error {
	if len(path) == 0 {
		return fmt.Errorf("empty path")
	}
	m := obj
	for i, field := range path[:len(path)-1] {
		next, ok := m[field]
		if !ok || next == nil {
			nm := map[string]any{}
			m[field] = nm
			m = nm
			continue
		}
		nm, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is a %T, not a map", strings.Join(path[:i+1], "."), next)
		}
		m = nm
	}
	m[path[len(path)-1]] = v
	return nil
}

func clonePath(p []string) []string { return append([]string(nil), p...) }

// deepCopyJSON copies a JSON-compatible value (as DeepCopyJSONValue) without
// panicking on unexpected types.
func deepCopyJSON(v any) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("not a JSON value: %v", r)
		}
	}()
	return runtime.DeepCopyJSONValue(v), nil
}
