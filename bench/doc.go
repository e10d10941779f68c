// Package bench is Switchboard's benchmark kit (see docs/benchmarks.md):
//
//	bench/run.sh [short|full|profile|peers|overhead|sms]   build, start PostgreSQL, the mock and the server, run, print the table
//	bench/mockllm                       the mock vendor (anthropic, openai, gemini; instant or paced)
//	bench/cmd/loadtest                  the load scenarios (vegeta, open and closed loop)
//	bench/cmd/fakecarrier               the SMS carrier of `bench/run.sh sms` (sms/smstest as a process)
//	bench/cmd/smsload                   issue 40: inbound SMS to two replicas, one killed; exactly-once check
//	server_bench_test.go                in-process Go benchmarks of scenarios 2 and 3, for pprof
//
// The Go benchmarks need BENCH_DATABASE_URL (a PostgreSQL cluster: they create and drop their
// own database in it) and BENCH_MOCK_URL (a running mockllm); without them they are skipped.
package bench
