package pgstore

// RecordColumnNames are recordColumns' names, for TestRecordColumns.
func RecordColumnNames() []string {
	names := make([]string, len(recordColumns))
	for i, c := range recordColumns {
		names[i] = c.name
	}
	return names
}
