package acp

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Golden fixtures of our own, one per generated message type and one per
// union variant, in testdata/golden. Each fixture is the encoding of a
// deterministic sample value (every field set); the test checks that
//   - the sample still encodes to exactly the fixture's bytes,
//   - the fixture decodes and re-encodes to exactly the same bytes,
//   - the decoded value passes Validate.
//
// Regenerate after a deliberate change with: go test -run TestGolden -update-golden

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden from the sample values")

// sampleFiller builds deterministic sample values by reflection.
type sampleFiller struct {
	// variant picks the variant to set for each union type by name; others
	// take their first variant.
	variant map[string]string
}

func (f *sampleFiller) fill(v reflect.Value, name string, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(name)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(len(name)))
	case reflect.Float64:
		v.SetFloat(float64(len(name)) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		if depth > 16 {
			return
		}
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem(), name, depth+1)
		v.Set(p)
	case reflect.Slice:
		if depth > 16 {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		f.fill(s.Index(0), name, depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		val := reflect.New(v.Type().Elem()).Elem()
		if v.Type().Elem().Kind() == reflect.Interface {
			val.Set(reflect.ValueOf(map[string]any{"n": float64(1), "s": name}))
		} else {
			f.fill(val, name, depth+1)
		}
		m.SetMapIndex(reflect.ValueOf("k"), val)
		v.Set(m)
	case reflect.Interface:
		v.Set(reflect.ValueOf(map[string]any{"n": float64(1), "s": name}))
	case reflect.Struct:
		t := v.Type()
		if isUnionType(t) {
			want := f.variant[t.Name()]
			for i := 0; i < t.NumField(); i++ {
				if !t.Field(i).IsExported() {
					continue
				}
				if want == "" || t.Field(i).Name == want {
					fv := v.Field(i)
					f.fill(fv, name, depth+1)
					return
				}
			}
			return
		}
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			if !sf.IsExported() || strings.HasPrefix(sf.Type.Name(), "Nullable[") {
				continue
			}
			tag := strings.Split(sf.Tag.Get("json"), ",")[0]
			if tag == "-" {
				continue
			}
			f.fill(v.Field(i), tag, depth+1)
		}
	}
}

// isUnionType: a generated union has only json:"-" exported pointer fields.
func isUnionType(t reflect.Type) bool {
	for _, u := range generatedUnions {
		if u.Name == t.Name() {
			return true
		}
	}
	return false
}

// checkGolden compares a sample's encoding with its fixture and checks that
// the fixture round-trips and validates.
func checkGolden(t *testing.T, file string, sample any, fresh func() any) {
	t.Helper()
	got, err := json.Marshal(sample)
	if err != nil {
		t.Fatalf("%s: marshal sample: %v", file, err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "golden", file)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (run with -update-golden to create)", file, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: sample encodes differently\n got %s\nwant %s", file, got, want)
	}
	decoded := fresh()
	if err := json.Unmarshal(want, decoded); err != nil {
		t.Fatalf("%s: decode fixture: %v", file, err)
	}
	again, err := json.Marshal(decoded)
	if err != nil {
		t.Fatalf("%s: re-encode: %v", file, err)
	}
	if !bytes.Equal(append(again, '\n'), want) {
		t.Fatalf("%s: round trip differs\n got %s\nwant %s", file, again, want)
	}
	if v, ok := decoded.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			t.Fatalf("%s: Validate: %v", file, err)
		}
	}
}

func TestGoldenMessages(t *testing.T) {
	f := &sampleFiller{}
	for _, m := range generatedMessages {
		t.Run(m.Name, func(t *testing.T) {
			v := m.New()
			f.fill(reflect.ValueOf(v).Elem(), m.Name, 0)
			checkGolden(t, "messages/"+m.Name+".json", v, m.New)
		})
	}
}

func TestGoldenUnionVariants(t *testing.T) {
	for _, u := range generatedUnions {
		for _, variant := range u.Variants {
			t.Run(u.Name+"/"+variant, func(t *testing.T) {
				f := &sampleFiller{variant: map[string]string{u.Name: variant}}
				v := u.New()
				rv := reflect.ValueOf(v).Elem()
				f.fill(rv, u.Name, 0)
				fixDiscriminators(rv)
				if c, ok := u.IntConsts[variant]; ok {
					rv.FieldByName(variant).Elem().SetInt(int64(c))
				} else if u.IntConsts != nil {
					rv.FieldByName(variant).Elem().SetInt(1)
				}
				checkGolden(t, "unions/"+u.Name+"."+variant+".json", v, u.New)
				// The decoded value holds the same variant.
				decoded := u.New()
				raw, _ := json.Marshal(v)
				if err := json.Unmarshal(raw, decoded); err != nil {
					t.Fatal(err)
				}
				if reflect.ValueOf(decoded).Elem().FieldByName(variant).IsNil() {
					t.Fatalf("decoding %s did not select %s", raw, variant)
				}
			})
		}
	}
}

// fixDiscriminators sets the tag of an open union's catch-all variant to a
// value no known variant uses, and the raw bytes it keeps.
func fixDiscriminators(v reflect.Value) {
	if o := v.FieldByName("Other"); o.IsValid() && o.Kind() == reflect.Pointer && !o.IsNil() && o.Elem().Kind() == reflect.Struct && o.Elem().FieldByName("Raw").IsValid() {
		o.Elem().FieldByName("State").SetString("_custom")
		o.Elem().FieldByName("Raw").SetBytes([]byte(`{"detail":{"n":1},"state":"_custom"}`))
	}
}
