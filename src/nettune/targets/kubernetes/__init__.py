"""Kubernetes target: pods as hosts, through the official client."""
