package engine

import "github.com/codexec/codexec/internal/runreport"

// Usage is what one run cost, as measured (runreport.Usage: results and
// log entries carry the same record).
type Usage = runreport.Usage

// Ended records f as res's end facts and sets its end reason from them:
// the one place a result's end reason is set (a later fact, such as a full
// disk, is added to res.End and passed here again).
func Ended(res Result, f runreport.Facts) Result {
	res.End = f
	res.EndReason = runreport.Reason(f)
	return res
}
