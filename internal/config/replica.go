package config

import (
	"errors"
	"time"
)

// Replica holds the settings of one replica among several sharing a
// PostgreSQL CODEXEC_STORE over HTTP: its name in the session registry,
// where the others reach it, and the secret of the internal hop that
// forwards a call to the replica holding its session.
type Replica struct {
	// ID names this replica in the session registry and in "session lost"
	// answers; empty: the host name plus a random suffix (app decides).
	ID string
	// Addr is the base URL other replicas reach this one at
	// (http://10.0.0.7:8080); empty: derived from the bound --http address.
	Addr string
	// Secret authenticates the internal hop between replicas (HMAC key);
	// never logged, shown masked.
	Secret string
	// Lease is how long a replica stays alive in the registry without a
	// heartbeat; it heartbeats every Lease/3.
	Lease time.Duration
}

// MinReplicaSecret is the shortest CODEXEC_REPLICA_SECRET accepted.
const MinReplicaSecret = 16

func init() {
	settings = append(settings, replicaSettings...)
}

var replicaSettings = []setting{
	{"CODEXEC_REPLICA_ID", "", "this replica's name in the session registry (PostgreSQL store over HTTP; default: host name plus a random suffix)", str(func(c *Config) *string { return &c.Replica.ID })},
	{"CODEXEC_REPLICA_ADDR", "", "base URL other replicas reach this one at, e.g. http://10.0.0.7:8080 (default: http://BOUND_ADDR of --http)", str(func(c *Config) *string { return &c.Replica.Addr })},
	{"CODEXEC_REPLICA_SECRET", "", "shared secret (16+ characters, the same on every replica) authenticating calls forwarded between replicas; required with a PostgreSQL CODEXEC_STORE over HTTP; shown masked", secret(str(func(c *Config) *string { return &c.Replica.Secret }))},
	{"CODEXEC_REPLICA_LEASE", "15s", "a replica silent this long is dead and its sessions are marked lost, at most 4/3 of it after it stopped (heartbeat every third of it)", duration(func(c *Config) *time.Duration { return &c.Replica.Lease })},
}

// Replicated reports whether this server takes part in the session
// registry shared by replicas: a PostgreSQL store served over HTTP.
func (c Config) Replicated() bool {
	return c.StoreDSN() != "" && c.Remote.HTTPAddr != ""
}

// validateReplica checks the replica settings of a replicated server.
func (c Config) validateReplica() error {
	if !c.Replicated() {
		return nil
	}
	if len(c.Replica.Secret) < MinReplicaSecret {
		return errors.New("CODEXEC_REPLICA_SECRET must be set to 16 or more characters (the same on every replica) when CODEXEC_STORE is PostgreSQL and codexec serves over HTTP: replicas forward calls to each other with it")
	}
	if c.Replica.Lease < time.Second {
		return errors.New("CODEXEC_REPLICA_LEASE must be at least 1s")
	}
	return nil
}
