"""Lab target: network namespaces on a bridge, built by this machine."""
