package bench

// Group is a group of workloads that a package above bench defines (the
// broker's, which bench cannot import: it sits above storage and offsets
// as bench does, beside it). Config.Extra lists them; the suite runs them
// after its own, selected by Name as its own groups are.
type Group struct {
	Name      string
	Workloads func(c Config) []Workload
}

// Finish fills a result's rates, and its baseline's rates and ratio,
// from their counts and times: what the suite's own workloads do, for
// workloads defined outside the package.
func (r *Result) Finish() {
	if r.Baseline != nil {
		r.Baseline.finish()
	}
	r.finish()
}
