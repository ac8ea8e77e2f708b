package testfake

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
)

// Widget is a custom resource's Go type as operators write it (kubebuilder,
// client-gen): JSON only, no protobuf code.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec `json:"spec,omitempty"`
}

// WidgetSpec is a Widget's spec: numbers, a list, a map and raw JSON.
type WidgetSpec struct {
	Size  int                  `json:"size"`
	Ratio float64              `json:"ratio,omitempty"`
	Tags  []string             `json:"tags,omitempty"`
	Extra map[string]string    `json:"extra,omitempty"`
	Raw   runtime.RawExtension `json:"raw,omitempty"`
}

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

func deepCopyJSON[T any](in *T) *T {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

// DeepCopyObject copies w through JSON.
func (w *Widget) DeepCopyObject() runtime.Object { return deepCopyJSON(w) }

// DeepCopyObject copies w through JSON.
func (w *WidgetList) DeepCopyObject() runtime.Object { return deepCopyJSON(w) }

// WidgetClient is what client-gen generates for widgets in gv: the group's
// REST client (its setConfigDefaults) and a gentype client over it, for
// namespace ns ("" for all).
func WidgetClient(cfg *rest.Config, gv schema.GroupVersion, ns string) (rest.Interface, *gentype.ClientWithList[*Widget, *WidgetList], error) {
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(gv.WithKind("Widget"), &Widget{})
	s.AddKnownTypeWithName(gv.WithKind("WidgetList"), &WidgetList{})
	metav1.AddToGroupVersion(s, gv)
	config := rest.CopyConfig(cfg)
	config.GroupVersion = &gv
	config.APIPath = "/apis"
	config.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(s, serializer.NewCodecFactory(s)).WithoutConversion()
	rc, err := rest.RESTClientFor(config)
	if err != nil {
		return nil, nil, err
	}
	return rc, gentype.NewClientWithList[*Widget, *WidgetList]("widgets", rc, runtime.NewParameterCodec(s), ns,
		func() *Widget { return &Widget{} }, func() *WidgetList { return &WidgetList{} }), nil
}
