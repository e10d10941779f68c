// Package benchkit holds what several load generators of bench/cmd share: the agent of
// `bench/run.sh agents` and its corpus (SetupAgent), a webhook receiver that checks every
// delivery's signature (Receiver), and the SVG helpers of the charts (LineChart, NiceCeil).
package benchkit
