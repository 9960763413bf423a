// Package egress is the one owner of a run's network: the policy (which
// hosts and ports a run may reach), the proxy that enforces it, the DNS
// stub the sandbox resolves names with, credential injection, and the
// audit of every connection.
//
// Threat model, and why the design is what it is:
//
//   - The code in the sandbox is untrusted and may try to reach anything.
//     Its network namespace has no route out; the only sockets in it are
//     the ones the backend captured (sandbox.Capture) and this package
//     serves from outside. Nothing the program does can add a route.
//   - A policy names hosts, never addresses, and the proxy resolves names
//     itself, then dials exactly the address it resolved: a program cannot
//     smuggle a second resolution (DNS rebinding) between check and dial.
//   - Names resolving to loopback, private, shared (CGNAT), link-local
//     (cloud metadata at 169.254.169.254), multicast or unspecified
//     addresses are refused, so an allowed public name cannot be pointed at
//     the server's own services. Operators reach internal services on
//     purpose with pins (Config.Pins), which bypass that check for a name.
//   - An IP literal destination is refused unless a rule names that IP: an
//     allowed name must not become "any address".
//   - TLS to an allowed name must carry that name as SNI: a program cannot
//     use an allowed CONNECT to reach another virtual host on a shared
//     front (domain fronting with a different SNI).
//   - DNS queries for names the policy denies are answered NXDOMAIN by the
//     stub and never forwarded: a denied name cannot leak through lookups.
//   - Credentials are added outside the sandbox, only to requests to their
//     host, over TLS the proxy terminates and re-originates verified; the
//     sandbox holds only a placeholder.
//   - Every run has limits (connections open and in total, bytes, idle
//     time): a run cannot exhaust the server's sockets or bandwidth.
//   - Counters for metrics carry no host names (unbounded label values).
//
// Limits: each run's binding allows DefaultMaxOpenConns connections open
// at once, DefaultMaxConns over the run, DefaultMaxBytes sent plus received
// and DefaultIdleTimeout without a byte either way, unless Config.Limits
// says otherwise. Past a limit a new connection is denied with the reason
// "limit" (the program gets a 403 saying so) and a transfer in progress is
// cut.
//
// Policy changes (Binding.SetPolicy) replace the policy whole and apply to
// new connections and DNS answers; connections already open keep going
// until they close, go idle, or the run ends (Binding.Close).
//
// A program must speak first on a CONNECT tunnel or a captured port (TLS
// and HTTP do): the proxy reads the first bytes to check them. Plain HTTP
// upgrades (101, e.g. WebSocket over ws://) are relayed as is after the
// response.
package egress
