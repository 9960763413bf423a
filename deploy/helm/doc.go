// Package helmchart checks the codexec Helm chart in ./codexec: its tests
// render the chart with the Helm library for several value sets and decode
// every rendered object strictly into the Kubernetes API types, so a
// misspelled or misplaced field fails the test instead of being dropped by
// the API server. It is its own module so that codexec's module does not
// depend on Helm and client-go.
package helmchart
