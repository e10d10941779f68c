package main

import (
	"os"

	"switchboard/bench/benchkit"
)

// CPU per request (benchkit.CPUWatch): on a 2-core machine shared by the server, PostgreSQL,
// the mock, the peer gateway and the load generator, throughput is the sum of their costs, so a
// change is judged more finely by its CPU per request than by its req/s.

// parseCPUWatch reads -cpu name=PID,...; loadgen, this process, is always watched.
func parseCPUWatch(s string) (benchkit.CPUWatch, error) {
	w, err := benchkit.ParseCPUWatch(s)
	if err != nil {
		return nil, err
	}
	w["loadgen"] = os.Getpid()
	return w, nil
}
