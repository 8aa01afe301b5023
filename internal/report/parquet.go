package report

import (
	"fmt"

	"github.com/parquet-go/parquet-go"

	"github.com/codefeedback/codefeedback/schema"
)

// parquetFeatures reads a Parquet file's schema as card features: strings,
// integers, floats and booleans as their dtypes, lists of structs (the
// messages column) as lists of their fields.
func parquetFeatures(path string) ([]Feature, error) {
	f, pf, err := schema.OpenParquet(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Feature
	for _, field := range pf.Schema().Fields() {
		ft, err := featureOf(field)
		if err != nil {
			return nil, fmt.Errorf("%s: column %s: %w", path, field.Name(), err)
		}
		out = append(out, ft)
	}
	return out, nil
}

func featureOf(n parquet.Field) (Feature, error) {
	ft := Feature{Name: n.Name()}
	if n.Leaf() {
		ft.Dtype = dtypeOf(n)
		return ft, nil
	}
	// LIST<STRUCT<...>>: group (LIST) { repeated group list { element } }.
	if lt := n.Type().LogicalType(); lt != nil && lt.String() == "LIST" {
		elem := n.Fields()[0]
		if len(elem.Fields()) == 1 && !elem.Leaf() {
			elem = elem.Fields()[0]
		}
		if elem.Leaf() {
			ft.Sequence = dtypeOf(elem)
			return ft, nil
		}
		var err error
		ft.List, err = featuresOf(elem.Fields())
		return ft, err
	}
	var err error
	ft.Struct, err = featuresOf(n.Fields())
	return ft, err
}

// featuresOf is the features of a group's fields, in order.
func featuresOf(fields []parquet.Field) ([]Feature, error) {
	var out []Feature
	for _, c := range fields {
		cf, err := featureOf(c)
		if err != nil {
			return nil, err
		}
		out = append(out, cf)
	}
	return out, nil
}

func dtypeOf(n parquet.Node) string {
	switch n.Type().Kind() {
	case parquet.Int64:
		return "int64"
	case parquet.Int32:
		return "int32"
	case parquet.Double:
		return "float64"
	case parquet.Float:
		return "float32"
	case parquet.Boolean:
		return "bool"
	}
	return "string"
}
