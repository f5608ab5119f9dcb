package diagnose

// counterActivity is how a counter moved inside the window.
type counterActivity struct {
	// first is the first step it rose (-1: never); steps how many steps it
	// rose in; total by how much.
	first, steps int
	total        float64
}

// activityOf reads a per-step increase row.
func activityOf(v []float64, thr float64) counterActivity {
	a := counterActivity{first: -1}
	for i, x := range v {
		if x > thr {
			if a.first < 0 {
				a.first = i
			}
			a.steps++
			a.total += x
		}
	}
	return a
}
