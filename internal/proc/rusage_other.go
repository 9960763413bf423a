//go:build !linux

package proc

// maxRSSBytes converts wait4's ru_maxrss, which BSDs and macOS give in
// bytes.
func maxRSSBytes(maxrss int64) int64 { return maxrss }
