package audit

import "testing"

// SetMaxScanned lowers RecentRows' bound for the test's life.
func SetMaxScanned(t *testing.T, n int) {
	old := maxScanned
	maxScanned = n
	t.Cleanup(func() { maxScanned = old })
}
