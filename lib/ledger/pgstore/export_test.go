package pgstore

// RecordColumnNames are recordColumns' names, for TestRecordColumns.
func RecordColumnNames() []string {
	names := make([]string, len(recordColumns))
	for i, c := range recordColumns {
		names[i] = c.name
	}
	return names
}

// SetPage makes s's Each read n rows per statement.
func SetPage(s *Store, n int) { s.pageSize = n }

// EachPage is eachPage, for BenchmarkEach.
const EachPage = eachPage
