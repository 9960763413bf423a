package proc

// maxRSSBytes converts wait4's ru_maxrss, which Linux gives in KiB.
func maxRSSBytes(maxrss int64) int64 { return maxrss << 10 }
