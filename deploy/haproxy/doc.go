// Package haproxy holds no code: its test checks the HAProxy configurations
// beside it (haproxy.cfg for replicas on one host, haproxy-kubernetes.cfg for
// a cluster) with HAProxy's own parser.
package haproxy
