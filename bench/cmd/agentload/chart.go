package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"switchboard/bench/benchkit"
)

// chartMain is `agentload chart -o FILE [-title T] [-caption C] TABLE.txt`: the two
// ratios, agent / stored and embed / agent, round by round, from the round rows of one run's
// table (bench/run.sh agents writes it as table.txt), with the baseline's when the run had
// one (base-*), on one scale against the target of 0.8.
func chartMain(args []string) error {
	fs := flag.NewFlagSet("chart", flag.ExitOnError)
	out := fs.String("o", "agents-ratios.svg", "the SVG to write")
	title := fs.String("title", "Deployed agents: the issue's ratios, round by round", "the chart's title")
	caption := fs.String("caption", "", "the line under the title (where and when the run was made)")
	_ = fs.Parse(args)
	if fs.NArg() != 1 {
		return fmt.Errorf("give one table")
	}
	rates, err := roundRates(fs.Arg(0))
	if err != nil {
		return err
	}
	var lines []benchkit.Line
	for _, l := range []struct{ label, num, den, color string }{
		{"agent / stored", "agent", "stored", "#1565c0"},
		{"embed / agent", "embed", "agent", "#ef6c00"},
		{"baseline: agent / stored", "base-agent", "base-stored", "#90caf9"},
		{"baseline: embed / agent", "base-embed", "base-agent", "#ffcc80"},
	} {
		line := benchkit.Line{Label: l.label, Color: l.color}
		for round := 1; round <= len(rates); round++ {
			num, den := rates[round][l.num], rates[round][l.den]
			if num > 0 && den > 0 {
				line.X, line.Y = append(line.X, float64(round)), append(line.Y, num/den)
			}
		}
		if len(line.X) > 0 {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return fmt.Errorf("%s: no round rows", fs.Arg(0))
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()
	return benchkit.CompareChart(f, *title, *caption, "round", "ratio of req/s", lines, 0.8, "target: 0.8")
}

// roundRates reads the round rows of a table ("ROUND ROUTE REQ/S ..."): req/s by round and
// route.
func roundRates(path string) (map[int]map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rates := map[int]map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		round, err1 := strconv.Atoi(fields[0])
		rate, err2 := strconv.ParseFloat(fields[2], 64)
		if err1 != nil || err2 != nil || round < 1 {
			continue
		}
		if rates[round] == nil {
			rates[round] = map[string]float64{}
		}
		rates[round][fields[1]] = rate
	}
	return rates, sc.Err()
}
