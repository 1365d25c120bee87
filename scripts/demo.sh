#!/usr/bin/env bash
# Install what nettune needs, then run the demo study on the built-in lab.
source "$(dirname "$0")/env.sh"
nettune demo "$@"
