// Package storetest holds the one test suite every store of codexec's
// state must pass: the embedded one (script directories, JSONL history with
// its SQLite index, the in-memory session registry) and the PostgreSQL one
// (pgstore). Each test runs the same table against both and requires the
// same answers, so a replica on the shared store behaves exactly as a
// single server on its data directory. Its one exported piece is a
// generated history (Executions, SeedEmbedded, SeedPostgres) for the
// benchmarks here and of the packages reading the history (the console).
package storetest
