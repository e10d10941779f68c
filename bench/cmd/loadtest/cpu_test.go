package main

import (
	"os"
	"testing"
)

func TestParseCPUWatchAddsTheLoadGenerator(t *testing.T) {
	w, err := parseCPUWatch("server=12")
	if err != nil || w["server"] != 12 || w["loadgen"] != os.Getpid() || len(w) != 2 {
		t.Fatalf("parseCPUWatch = %v, %v", w, err)
	}
	if _, err := parseCPUWatch("server"); err == nil {
		t.Fatal("parseCPUWatch accepted a name without a PID")
	}
}
